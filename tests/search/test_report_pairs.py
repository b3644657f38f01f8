"""Peaks compared like for like: only over the tasks both strategies solved."""

from __future__ import annotations

from types import SimpleNamespace

from optimizer.search.report import both_solved, both_solved_cell


def _run(*episodes):
    return SimpleNamespace(episodes=[
        SimpleNamespace(task_id=task, success=ok, metrics={"peak_tokens": peak}) for task, ok, peak in episodes
    ])


def test_failures_that_ended_early_do_not_lower_the_comparison():
    chosen = _run(("a", True, 1800), ("b", True, 2000), ("c", True, 2400))
    seed = _run(("a", False, 500), ("b", True, 2600), ("c", True, 3000))
    paired = both_solved(chosen, seed)
    assert paired == {"tasks": 2, "chosen_peak_mean": 2200, "peak_mean": 2800}
    assert both_solved_cell({"both_solved": paired}) == "2,200 vs 2,800 (2)"


def test_no_common_success_is_said_not_averaged():
    paired = both_solved(_run(("a", True, 900)), _run(("a", False, 400), ("b", True, 700)))
    assert paired["tasks"] == 0 and paired["peak_mean"] is None
    assert both_solved_cell({"both_solved": paired}) == "no task"
    assert both_solved_cell({"strategy": "chosen"}) == "–"
