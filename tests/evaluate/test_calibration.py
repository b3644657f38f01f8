"""Tier 0's recall probability fitted to tier-1 verdicts, and judged by agreement and false passes."""

from __future__ import annotations

import pytest

from optimizer.evaluate.calibration import Cell, agreement, fit_recall_probability


def cell(honest_ok: bool, never_ok: bool, recalls: int, tier1_ok: bool, *, strategy: str = "offload", none_ok=True):
    return Cell(strategy, "t", 1, "train", honest_ok, never_ok, recalls, tier1_ok, none_ok)


def test_an_agent_that_never_recalls_fits_p_zero_and_one_that_always_does_fits_one():
    # cells where only a recall saves the task: honest passes, never fails
    never_recalls = [cell(True, False, 1, False) for _ in range(6)]
    always_recalls = [cell(True, False, 1, True) for _ in range(6)]
    assert fit_recall_probability(never_recalls) == 0.0
    assert fit_recall_probability(always_recalls) == 1.0


def test_half_the_recalls_made_fits_a_middle_p():
    # one recall needed: the agent made it in 3 of 6 cells
    cells = [cell(True, False, 1, i < 3) for i in range(6)]
    assert fit_recall_probability(cells) == pytest.approx(0.5)
    # two recalls needed and 1 of 4 passes: p**2 = 1/4
    assert fit_recall_probability([cell(True, False, 2, i < 1) for i in range(4)]) == pytest.approx(0.5)


def test_cells_that_need_no_recall_do_not_move_p():
    cells = [cell(True, True, 0, True), cell(False, False, 0, False)]
    assert fit_recall_probability(cells) == 1.0  # the likelihood is flat: the default


def test_a_false_pass_is_a_tier0_pass_the_agent_failed_where_full_context_solved_it():
    cells = [
        cell(True, False, 1, False),  # false pass
        cell(True, False, 1, False, none_ok=False),  # the agent failed full context too: not counted
        cell(True, False, 1, True),
        cell(True, True, 0, True, strategy="none"),  # full context itself is never a false pass
    ]
    result = agreement(cells, lambda c: c.honest_ok)
    assert (result["false_pass"], result["false_pass_of"]) == (1, 2)
    assert result["agreement"] == pytest.approx(2 / 4)
    calibrated = agreement(cells, lambda c: c.pass_probability(0.0) >= 0.5)
    assert calibrated["false_pass"] == 0 and calibrated["agreement"] == pytest.approx(3 / 4)


def test_an_agent_that_loses_runs_to_edits_fits_a_use_probability_below_one():
    from optimizer.evaluate.calibration import fit_agent_model

    def edited(edits: int, tier1_ok: bool, strategy: str = "mask") -> Cell:
        return Cell(strategy, "t", 1, "train", True, True, 0, tier1_ok, True, edits)

    # full context (no edit) always solved; with 2 edits, 9 of 16 runs survive: u**2 = 9/16, u = 0.75
    cells = [edited(0, True, "none") for _ in range(8)] + [edited(2, i < 9) for i in range(16)]
    model = fit_agent_model(cells)
    assert model.use_probability == pytest.approx(0.75) and model.recall_probability == 1.0
    untouched = [edited(0, True, "none"), edited(3, True)]
    assert fit_agent_model(untouched).use_probability == 1.0  # nothing lost to edits: tier 0 as it is


def test_the_brier_score_rewards_a_probability_near_the_observed_rate():
    from optimizer.evaluate.calibration import brier

    cells = [Cell("mask", "t", 1, "val", True, True, 0, i < 3, True, 2) for i in range(4)]
    assert brier(cells, lambda c: 1.0) == pytest.approx(0.25)
    assert brier(cells, lambda c: c.pass_probability(1.0, 0.75**0.5)) == pytest.approx(0.1875)
    assert brier([], lambda c: 1.0) is None
