"""The long-horizon benchmark's sampling and row arithmetic, on reference-agent episodes (no model)."""

from __future__ import annotations

import json

import pytest

from optimizer.agent.kinds import ReferenceAgentConfig
from optimizer.agent.loop import EpisodeServices, run_episode
from optimizer.context.strategies import parse_strategy
from tasks.reach_long import FAMILIES, ReachLongSuite
from tests.conftest import benchmark_module

SUITE = ReachLongSuite().load()
TRAIN = [t for t in SUITE.tasks if t.id in SUITE.train_ids]


@pytest.fixture(scope="module")
def bench():
    yield from benchmark_module("bench_reach_long")


def test_the_sample_takes_the_first_tasks_of_every_family_in_suite_order(bench):
    sample = bench.first_of_each_family(TRAIN, 2)
    assert [t.meta["family"] for t in sample] == [f for f in FAMILIES for _ in range(2)]
    assert all(t.meta["seed"] in (0, 1) for t in sample)


def test_a_row_counts_successes_per_family_and_the_context_growth(bench):
    tasks = bench.first_of_each_family(TRAIN, 1)
    episodes = [
        run_episode(t, ReferenceAgentConfig().build(t, None), parse_strategy("none"), EpisodeServices()) for t in tasks
    ]
    episodes[0].outcome = "failure"
    row = bench.row(episodes, tasks)
    assert row["episodes"] == 4 and row["success"] == 0.75
    assert row["by_family"][tasks[0].meta["family"]] == 0.0 and list(row["failures"]) == [tasks[0].id]
    assert row["growth_mean"] > 3 and row["peak_mean"] == sum(e.metrics.peak_tokens for e in episodes) / 4


def test_the_hourly_rate_counts_only_episodes_run_now(bench):
    assert bench.throughput({"episodes_run": 4, "wall_s": 360.0}) == {"episodes_run": 4, "episodes_per_hour": 40.0}
    # All stored: nothing ran, so there is no rate to report (not an infinite or zero one).
    assert bench.throughput({"episodes_run": 0, "wall_s": 0.0}) == {"episodes_run": 0, "episodes_per_hour": None}
    assert bench.throughput({}) == {"episodes_run": 0, "episodes_per_hour": None}


def test_rows_of_an_earlier_run_are_kept_only_for_the_same_cells(bench, tmp_path):
    cells = {"split": "test", "tasks": ["a", "b"], "seeds": 1, "temperature": 0.0}
    out = tmp_path / "reach_long.json"
    measured = {"tier0": {}, "tier1": {"episodes_run": 2, "episodes_per_hour": 30.0}}
    out.write_text(json.dumps({**cells, "rows": {"none": measured}}))
    assert bench.earlier_rows(out, cells) == {"none": measured}
    assert bench.earlier_rows(out, {**cells, "temperature": 0.3}) == {}  # other cells: nothing carried over
    assert bench.earlier_rows(out, {**cells, "tasks": ["a"]}) == {}
    out.write_text("{not json")
    assert bench.earlier_rows(out, cells) == {}
    # Rebuilt from stored episodes only, a row keeps the rate of the run that measured it.
    tasks = bench.first_of_each_family(TRAIN, 1)
    episodes = [
        run_episode(t, ReferenceAgentConfig().build(t, None), parse_strategy("none"), EpisodeServices()) for t in tasks
    ]
    kept = bench.tier1_row(episodes, tasks, {}, measured)
    assert kept["episodes_per_hour"] == 30.0 and kept["episodes"] == 4
    fresh = bench.tier1_row(episodes, tasks, {"episodes_run": 4, "wall_s": 720.0}, measured)
    assert fresh["episodes_per_hour"] == 20.0
