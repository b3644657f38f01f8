"""A summary row's MLflow metrics: its figures and its failed tier-1 episodes per cause, for runs to compare on."""

from __future__ import annotations

from optimizer.tracking.summary_run import _numbers


def test_a_rows_failure_causes_are_metrics_and_its_text_fields_are_not():
    data = {
        "row": "learned",
        "tier0_success": 0.5,
        "tier1_success": 0.1,
        "facts_kept_share": None,  # a row that never summarizes: no metric rather than a zero
        "tier1_failures": {"step limit": 4, "answer lacks a value": 5},
    }
    assert _numbers(data) == {
        "tier0_success": 0.5,
        "tier1_success": 0.1,
        "tier1_failed_step_limit": 4.0,
        "tier1_failed_answer_lacks_a_value": 5.0,
    }
    assert _numbers({"tier0_success": 1.0}) == {"tier0_success": 1.0}  # no tier 1: no cause metric
