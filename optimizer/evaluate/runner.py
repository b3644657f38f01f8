"""Run tasks under one strategy with one agent, concurrently, recording each episode as it ends."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path

from optimizer.agent.episode import Episode
from optimizer.agent.loop import run_episode
from optimizer.context.strategies.base import ContextStrategy
from optimizer.errors import AconError, ConfigError
from optimizer.evaluate.endpoints import ModelEndpoints
from optimizer.evaluate.executors import EpisodeWork, Executor, LocalExecutor
from optimizer.evaluate.records import EpisodeRecords, EpisodeSummary
from optimizer.evaluate.reuse import borrow
from optimizer.evaluate.services import AgentSpec, services_for
from optimizer.evaluate.store import EpisodeStore, read_meta, write_meta
from optimizer.locking import exclusive
from optimizer.world.suite import only, task_ids
from optimizer.world.task import Task

OnEpisode = Callable[[Episode], None]
BUSY_HINT = "wait for it to finish; the episodes it records are reused when you rerun"


def run_key(*parts: object) -> str:
    payload = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:10]


def run_tasks(
    tasks: Sequence[Task],
    strategy: ContextStrategy,
    agent: AgentSpec,
    *,
    endpoints: ModelEndpoints | None,
    directory: Path,
    meta: dict,
    elsewhere: Callable[[], Sequence[Path]] = tuple,
    concurrency: int = 1,
    max_total_steps: int = 200,
    on_episode: OnEpisode | None = None,
    executor: Executor | None = None,
) -> EpisodeRecords:
    """Episodes for `tasks`, reusing any already recorded in `directory` (a killed run resumes).

    An episode that ended in an infrastructure error is not reused: its task runs again and the new record
    supersedes it (the newest record of a task counts), so a flaky endpoint never leaves a hole in a run. A task
    recorded by the same run over another task list (the directories `elsewhere()` names,
    `optimizer.evaluate.reuse`) is copied in, not run. Only one process at a time runs in `directory`
    (`DirectoryBusy` for a second one). Each episode is on disk before the next is handed out, and only its summary
    stays in memory (`EpisodeRecords`). The `executor` decides where episodes run (this process's threads by
    default, or Ray); the records are written here either way, so a run resumes under any executor.
    """
    with exclusive(directory, hint=BUSY_HINT):
        return _run_locked(
            tasks,
            strategy,
            agent,
            endpoints=endpoints,
            directory=directory,
            meta=meta,
            elsewhere=elsewhere,
            concurrency=concurrency,
            max_total_steps=max_total_steps,
            on_episode=on_episode,
            executor=executor or LocalExecutor(),
        )


def _run_locked(
    tasks: Sequence[Task],
    strategy: ContextStrategy,
    agent: AgentSpec,
    *,
    endpoints: ModelEndpoints | None,
    directory: Path,
    meta: dict,
    elsewhere: Callable[[], Sequence[Path]],
    concurrency: int,
    max_total_steps: int,
    on_episode: OnEpisode | None,
    executor: Executor,
) -> EpisodeRecords:
    strategy = strategy.fixed()
    # The version the run is keyed by: an episode run under another (its guideline file changed after the run
    # was planned) would sit in this directory under this run's label.
    expected = meta.get("strategy_version") or strategy.version()
    store = EpisodeStore(directory)

    def record(episode: Episode) -> int:
        if episode.strategy_version != expected:
            raise AconError(
                f"{directory}: episode {episode.task_id} ran under strategy version {episode.strategy_version}, "
                f"but the run is {expected} (its guideline file changed after the run began); not stored, "
                "run the command again"
            )
        return store.append(episode)

    existing = read_meta(directory)
    if existing is not None and existing.get("key") != meta.get("key"):
        raise ConfigError(f"{directory} holds episodes of a different run (key {existing.get('key')})")
    write_meta(directory, meta)
    order = task_ids(tasks)
    offsets, summaries = store.index()
    wanted = set(order)
    done = {i for i, s in summaries.items() if s.outcome != "infra_error" and i in wanted}
    missing = [i for i in order if i not in done]
    # Only a run with tasks left looks beside it: a finished run would read every sibling's meta for nothing.
    borrowed = borrow(store, missing, elsewhere(), expected) if missing else []
    if borrowed:
        offsets, summaries = store.index()
        done |= set(borrowed)  # `borrow` copies final records only
    if on_episode is not None:
        for task_id in order:
            if task_id in done:
                on_episode(store.episode_at(offsets[task_id]))
    todo = only(tasks, lambda task_id: task_id not in done)
    local = isinstance(executor, LocalExecutor)
    services = services_for(strategy, agent, endpoints) if todo and local else None
    if services is not None:
        services.max_total_steps = max_total_steps
    prefix = str(directory.resolve())

    def here(task: Task) -> Episode:
        assert services is not None  # only a local executor runs episodes here, and it has the services
        compressor = services.compressor
        attempt = compressor.attempt(f"{prefix}::{task.id}") if compressor else contextlib.nullcontext()
        with attempt:
            return run_episode(task, agent.build(task, endpoints), strategy, services)

    work = EpisodeWork(strategy, agent, endpoints.configs if endpoints is not None else {}, max_total_steps, prefix)
    finished = executor.episodes(work, todo, concurrency=concurrency, here=here, record=record)
    # Closed at once on an interrupt (Ctrl-C, SIGTERM, a failed episode): no queued task starts after it.
    with contextlib.closing(finished):
        for episode, offset in finished:
            offsets[episode.task_id] = offset
            summaries[episode.task_id] = EpisodeSummary.of(episode)
            if on_episode is not None:
                on_episode(episode)
            del episode  # the record is on disk; holding it here would keep a whole episode per task alive
    return EpisodeRecords(store.log, order, {i: offsets[i] for i in order}, {i: summaries[i] for i in order})
