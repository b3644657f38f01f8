"""Episodes on threads of this process (the default)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Literal, TypeVar

from optimizer.agent.episode import Episode
from optimizer.evaluate.executors.base import EpisodeWork, Executor
from optimizer.world.task import Task

T = TypeVar("T")


class LocalExecutor(Executor):
    """`concurrency` threads of this process; endpoints and caches are shared by the threads."""

    type: Literal["local"] = "local"

    def episodes(
        self,
        work: EpisodeWork,
        tasks: Sequence[Task],
        *,
        concurrency: int,
        here: Callable[[Task], Episode],
        record: Callable[[Episode], int],
    ) -> Generator[tuple[Episode, int], None, None]:
        def run_and_record(task: Task) -> tuple[Episode, int]:
            # Recorded on the thread that ran it. On an interrupt, an episode waiting on a model call raises
            # `Interrupted` and is never recorded (a rerun runs it); one that needs no model finishes and is
            # stored while the pool drains.
            episode = here(task)
            return episode, record(episode)

        return bounded_map(run_and_record, tasks, concurrency)


def bounded_map(work: Callable[[Task], T], tasks: Sequence[Task], concurrency: int) -> Generator[T, None, None]:
    """`work` over `tasks` on `concurrency` threads, results as they finish.

    At most `concurrency` tasks are in flight and a finished result is dropped once yielded, so a long
    task list never accumulates results (a pool's future keeps its result for as long as it is referenced),
    and an interrupted run (the iterator closed) waits only for those in flight, never for queued ones.
    """
    if concurrency <= 1:
        for task in tasks:
            yield work(task)
        return
    pending = iter(tasks)
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        running = {pool.submit(work, task) for task in itertools.islice(pending, concurrency)}
        while running:
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            for task in itertools.islice(pending, len(finished)):
                running.add(pool.submit(work, task))
            for future in finished:
                yield future.result()
            del finished, future
