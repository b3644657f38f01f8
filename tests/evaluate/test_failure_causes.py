"""A failed episode's causes are read off its checker's reasons: the phrasings acon's checkers write, never what an
answer quoted inside a reason says."""

from __future__ import annotations

import json
from pathlib import Path

from optimizer.agent.episode import Outcome
from optimizer.agent.episode_records import EpisodeMetrics
from optimizer.evaluate.failure_causes import cause_of, causes_of, causes_said, count_causes
from optimizer.evaluate.records import EpisodeSummary
from optimizer.evaluate.scores import Scores, TaskScore
from tasks.reach_long import World, answer_lacks, expect_writes

ROOT = Path(__file__).resolve().parents[2]
# The real agent's episodes behind the summary benchmark's validation figure, as committed.
STORED_RUNS = ROOT / "benchmarks" / "results" / "runs_summary_reach_long_langchain_val"


def test_the_long_horizon_checkers_reasons_have_their_causes():
    world = World(writes=[("reserve_stock", {"sku": "SKU-1", "units": 2}, True)] * 2)
    missing, repeated = expect_writes(world, "reserve_stock", [{"sku": "SKU-2", "units": 2}])
    assert (cause_of(missing), cause_of(repeated.lstrip("!"))) == ("write missing", "write repeated")
    assert [cause_of(r) for r in answer_lacks("", ["RSV-01"])] == ["no answer"]
    assert [cause_of(r) for r in answer_lacks("reservation RSV-02", ["RSV-01"])] == ["answer lacks a value"]
    assert cause_of("lost rule RULE-GC-06: gift card sent before verify_customer") == "rule broken"
    assert cause_of("turn 0 hit the step limit (15 per turn)") == "step limit"


def test_an_answer_that_quotes_another_cause_is_still_an_answer_lacking_a_value():
    for answer in ("turn 0 hit the step limit", "no reserve_stock with {}", "duplicate write", "lost rule X"):
        assert [cause_of(r) for r in answer_lacks(answer, ["RSV-01"])] == ["answer lacks a value"]


def test_an_unknown_phrasing_is_other_not_a_guess():
    assert cause_of("the moon is wrong") == "other"
    assert causes_of(["the moon is wrong", "no reserve_stock with {}", "no send_gift_card with {}"]) == (
        "write missing",
        "other",
    )


def test_every_reason_of_the_stored_tier1_episodes_has_a_named_cause():
    reasons = [
        reason
        for log in sorted(STORED_RUNS.glob("*/episodes.jsonl"))
        for line in log.read_text().splitlines()
        for reason in json.loads(line).get("reasons") or ()
    ]
    assert len(reasons) > 100
    causes = {cause_of(r) for r in reasons}
    assert "other" not in causes
    assert {"step limit", "write missing", "no answer", "answer lacks a value"} <= causes


def test_counts_are_failed_episodes_per_cause_in_a_fixed_order():
    counts = count_causes([("write missing", "step limit"), ("step limit",), ()])
    assert list(counts.items()) == [("step limit", 2), ("write missing", 1), ("other", 1)]
    assert causes_said(counts) == "step limit 2, write missing 1, other 1"
    assert causes_said(count_causes([])) == "none"


def summary(task: str, outcome: Outcome, *reasons: str) -> EpisodeSummary:
    return EpisodeSummary(task, outcome, EpisodeMetrics(peak_tokens=1000), tuple(reasons))


def test_scores_carry_the_causes_of_failures_only_and_round_trip():
    scored = Scores.of(
        [
            summary("a", "success"),
            summary("b", "failure", "turn 0 hit the step limit (15 per turn)", "answer '' lacks 'RSV-01'"),
            summary("c", "failure", "no reserve_stock with {'sku': 'SKU-1'}"),
        ],
        {},
    )
    assert [t.causes for t in scored.tasks] == [(), ("step limit", "no answer"), ("write missing",)]
    assert scored.failure_causes() == {"step limit": 1, "write missing": 1, "no answer": 1}
    assert Scores.from_dict(json.loads(json.dumps(scored.to_dict()))) == scored
    # A score stored before causes were kept reads back with none, and its failure counts as "other".
    old = {"task_id": "b", "success": False, "peak_tokens": 1000}
    assert TaskScore.from_dict(old).causes == ()
    assert Scores((TaskScore.from_dict(old),)).failure_causes() == {"other": 1}
