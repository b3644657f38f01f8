"""Memory that does not grow with the suite: a run keeps summaries, episodes stay on disk, tasks are built on
access, and what reads episodes back (pairs, scores, summaries) gets the same answers as from a list."""

from __future__ import annotations

import gc
import json
import tracemalloc
import weakref
from pathlib import Path

import pytest

from optimizer import stats
from optimizer.context.strategies import parse_strategy
from optimizer.evaluate.codec import decode_episode, encode_episode
from optimizer.evaluate.records import EpisodeRecords, EpisodeSummary
from optimizer.evaluate.runner import AgentSpec, run_tasks
from optimizer.evaluate.scores import Scores
from optimizer.evaluate.strategy_runs import summarize
from optimizer.mining.pairs import compressed_successes, find_pairs
from optimizer.world.sources import literal_carriers, need_sources
from optimizer.world.suite import TaskList
from tasks.builtin import BuiltinSuite


def _run(tasks, directory: Path, strategy: str = "none") -> EpisodeRecords:
    return run_tasks(
        tasks,
        parse_strategy(strategy),
        AgentSpec("reference"),
        endpoints=None,
        directory=directory,
        meta={"key": strategy},
    )


def _retained_bytes(n_tasks: int, tmp: Path) -> int:
    """Python memory still held once a run of `n_tasks` built-in tasks has returned (its result kept)."""
    tasks = BuiltinSuite(n_tasks=n_tasks, seed=n_tasks).load().tasks
    gc.collect()
    tracemalloc.start()
    try:
        result = _run(tasks, tmp / f"run-{n_tasks}")
        gc.collect()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(result) == n_tasks
    return held


def test_what_a_run_holds_grows_by_under_5_kb_per_task(tmp_path):
    """Before records streamed, every finished episode stayed in the run (~80 kB a task, bench_limits)."""
    _run(BuiltinSuite(n_tasks=8).load().tasks, tmp_path / "warm")  # imports and one-time caches
    small, large = _retained_bytes(30, tmp_path), _retained_bytes(150, tmp_path)
    per_task = (large - small) / 120
    assert per_task < 5 * 1024, f"{per_task / 1024:.1f} kB retained per task"


def test_records_read_back_what_the_runner_wrote(tmp_path):
    tasks = BuiltinSuite(n_tasks=12).load().tasks
    result = _run(tasks, tmp_path / "run", "fifo")
    lines = [json.loads(line) for line in (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()]
    written = [decode_episode(r) for r in lines]
    assert isinstance(result, EpisodeRecords) and result.task_ids == tuple(t.id for t in tasks)
    assert [encode_episode(e) for e in result] == [encode_episode(e) for e in written]
    assert encode_episode(result[3]) == encode_episode(written[3])
    assert [e.task_id for e in result[2:5]] == list(result.task_ids[2:5])
    assert result.summaries == [EpisodeSummary.of(e) for e in written]
    assert summarize(result) == summarize(written)
    assert Scores.of(result.summaries, {}) == Scores.of(written, {})
    again = _run(tasks, tmp_path / "run", "fifo")  # resumed: nothing re-runs, same records
    assert (tmp_path / "run" / "episodes.jsonl").read_text().count("\n") == len(tasks)
    assert again.summaries == result.summaries


def test_pairs_from_records_match_pairs_from_lists(tmp_path):
    tasks = BuiltinSuite(n_tasks=24).load().tasks
    full, lossy = _run(tasks, tmp_path / "none"), _run(tasks, tmp_path / "fifo", "fifo")
    as_lists = find_pairs(list(full), list(lossy), near_misses=True)
    from_disk = find_pairs(full, lossy, near_misses=True)
    assert as_lists, "fifo should lose some task of 24 (else this test compares nothing)"
    assert [(encode_episode(a), encode_episode(b)) for a, b in from_disk] == [
        (encode_episode(a), encode_episode(b)) for a, b in as_lists
    ]
    assert [encode_episode(e) for e in compressed_successes(full, lossy)] == [
        encode_episode(e) for e in compressed_successes(list(full), list(lossy))
    ]


def test_a_lazy_suite_is_the_eager_suite():
    source = BuiltinSuite(n_tasks=40, max_output_tokens=1500)
    suite = source.load()
    assert isinstance(suite.tasks, TaskList)
    eager = [source._task(i) for i in range(40)]
    kept = [t for t in eager if t.meta["max_output_tokens"] <= 1500]
    assert list(suite.tasks) == kept and 0 < len(kept) < 40
    assert [t.id for t in suite.split("train")] + [t.id for t in suite.split("test")] != []
    assert set(t.id for t in suite.split("train")) == suite.train_ids
    assert suite.task(kept[5].id) == kept[5] and suite.tasks[1:3].ids == (kept[1].id, kept[2].id)


def test_the_sources_cache_hits_on_a_rebuilt_task_and_keeps_no_task():
    suite = BuiltinSuite(n_tasks=6).load()
    task = suite.tasks[4]
    sources = need_sources(task)
    first = literal_carriers(task)  # what the cache holds; need_sources derives its answer from it
    alive = weakref.ref(task)
    del task
    gc.collect()
    assert alive() is None, "the cache keeps the task (and its world) alive"
    assert literal_carriers(suite.tasks[4]) is first  # a task built again is the same task
    assert need_sources(suite.tasks[4]) == sources
    other = BuiltinSuite(n_tasks=6, seed=1).load().tasks[4]
    assert other.id == suite.tasks[4].id and literal_carriers(other) is not first


@pytest.mark.parametrize("values", [[0.0, 1.0, 1.0, 0.0, 1.0] * 40, [float(i % 7) for i in range(999)]])
def test_the_bootstrap_in_blocks_is_the_bootstrap_in_one_matrix(values, monkeypatch):
    whole = stats.bootstrap_ci(values)
    monkeypatch.setattr(stats, "CHUNK_DRAWS", 3 * len(values) + 1)  # blocks of 3 resamples
    assert stats.bootstrap_ci(values) == whole
