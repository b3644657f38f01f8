"""The fidelity benchmark's arithmetic on hand-made verdicts: confusion, agreement, false passes, reasons."""

from __future__ import annotations

from pathlib import Path

import pytest

from optimizer.agent.episode import Episode
from optimizer.agent.episode_records import DeviationRecord, ToolCallRecord
from optimizer.stats import wilson_interval
from tasks.reach import ReachSuite
from tests.conftest import benchmark_module

ROOT = Path(__file__).resolve().parents[2]
TASK = next(t for t in ReachSuite().load().tasks if t.id == "reach-price-compare")


@pytest.fixture(scope="module")
def bench():
    yield from benchmark_module("bench_fidelity")


def episode(success: bool, *, recalled: bool = False, tier0_recall: bool = False, peak: int = 100) -> Episode:
    e = Episode(TASK.id, "reach", "s", "v", "agent", "success" if success else "failure")
    if recalled:
        e.tool_calls.append(ToolCallRecord(1, 0, "recall", {"handle": "h1"}, "sig", False, False, None, 10))
    if tier0_recall:
        e.deviations.append(DeviationRecord(1, 1, "value", "37.40", "recall", "static"))
    e.metrics = type(e.metrics)(peak_tokens=peak, recall_calls=len(e.tool_calls))
    return e


def test_false_passes_count_only_where_none_passed_on_the_same_seed(bench):
    V = bench.Verdict
    tier0 = {
        ("honest", "none", TASK.id): V(True, episode(True)),
        ("honest", "offload_preview", TASK.id): V(True, episode(True, tier0_recall=True, peak=150)),
    }
    tier1 = {
        ("none", TASK.id, 1): V(True, episode(True)),
        ("none", TASK.id, 2): V(False, episode(False)),
        ("offload_preview", TASK.id, 1): V(False, episode(False)),  # a false pass: none passed on seed 1
        ("offload_preview", TASK.id, 2): V(False, episode(False)),  # none failed too: the agent's variance
    }
    result = bench.analyse([TASK], ["none", "offload_preview"], tier0, tier1, 2, "honest")
    assert result["confusion"] == {"tier0_pass_tier1_pass": 1, "tier0_pass_tier1_fail": 3}
    assert result["agreement"] == 0.25
    assert (result["false_pass"], result["false_pass_of"]) == (1, 1)
    assert result["changed_episodes"] == 2 and result["changed_agreement"] == 0.0
    reasons = {(d["strategy"], d["seed"]): d["why"] for d in result["disagreements"]}
    assert "recall the model did not make" in reasons[("offload_preview", 1)]
    assert "under `none` too" in reasons[("offload_preview", 2)]
    assert "under `none` too" in reasons[("none", 2)]


def test_wilson_interval_is_not_a_point_at_zero():
    low, high = wilson_interval(0, 12)
    assert low == 0.0 and 0.24 < high < 0.25
    low, high = wilson_interval(5, 10)
    assert round(low, 3) == 0.237 and round(high, 3) == 0.763
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_the_recall_probability_fit_prefers_what_tier_1_did(bench):
    V = bench.Verdict
    tier0 = {
        ("honest", "offload_preview", TASK.id): V(True, episode(True, recalled=True)),
        ("never", "offload_preview", TASK.id): V(False, episode(False)),
    }

    def fit(tier1_passes: list[bool]) -> dict:
        tier1 = {("offload_preview", TASK.id, s + 1): V(ok, episode(ok)) for s, ok in enumerate(tier1_passes)}
        return bench.recall_fit([TASK], ["offload_preview"], tier0, tier1, len(tier1_passes))

    assert fit([True, True, True])["p_hat"] == 1.0
    assert fit([False, False, False])["p_hat"] == 0.0
    one_in_four = fit([True, False, False, False])
    assert one_in_four["p_hat"] == 0.25  # the rate at which the model made the recall tier 0 made
    errors = one_in_four["mean_abs_error"]
    assert errors["honest (p = 1)"] == 0.75 and errors["never (p = 0)"] == 0.25 and errors["fitted (p = 0.25)"] == 0.0
