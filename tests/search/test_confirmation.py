"""Which candidates the real agent confirms: near-twins by tier 0 share one confirmation, a different move set
gets the other."""

from __future__ import annotations

from optimizer.context.guideline import read_guideline
from optimizer.evaluate.scores import Scores, TaskScore
from optimizer.search.candidate import Candidate, distinct_moves, mildest_within, move_signature, other_move_sets
from tests.conftest import ROOT

SEED = read_guideline(ROOT / "guidelines" / "seed" / "seed.md")


def candidate(name: str, write: list[dict], history: list[dict]) -> Candidate:
    policy = SEED.policy.model_copy(update={"write": (), "history": ()}).model_dump(mode="json")
    policy.update(write=write, history=history)
    guideline = SEED.__class__.model_validate({**SEED.model_dump(mode="json"), "name": name, "policy": policy})
    return Candidate(guideline, origin="tighten", round=1)


MASK = {"move": "mask", "classes": ["dynamic_state"], "keep_last": 3}
EXTRACT = {"move": "extract", "classes": ["static"], "over": 200}
twin_a = candidate("a", [EXTRACT], [MASK])
twin_b = candidate("b", [{**EXTRACT, "over": 300}], [{**MASK, "keep_last": 2}])
other = candidate("c", [], [{"move": "clear", "classes": ["static"]}])


def test_knob_values_do_not_change_the_move_signature_but_a_move_does():
    assert move_signature(twin_a) == move_signature(twin_b) != move_signature(other)


def test_the_second_confirmation_goes_to_a_different_move_set_in_tier_0_order():
    assert distinct_moves([twin_a, twin_b, other], 2) == [twin_a, other]


def test_twins_fill_the_confirmations_when_no_other_move_set_is_left():
    assert distinct_moves([twin_a, twin_b], 2) == [twin_a, twin_b]
    assert distinct_moves([twin_a, twin_b, other], 3) == [twin_a, twin_b, other]
    assert distinct_moves([twin_a, twin_b, other], 1) == [twin_a]


def test_the_other_move_sets_come_from_the_whole_ranking_when_the_shortlist_is_all_twins():
    full_context = candidate("none", [], [])
    ranked = [twin_a, twin_b, full_context, other]
    assert other_move_sets(ranked, [twin_a, twin_b], 2) == [other]  # the moveless guideline is not one
    assert other_move_sets(ranked, [twin_a, other], 2) == []
    assert other_move_sets(ranked, [twin_a], 1) == []
    # Full context on the front is no move set of its own: the twins still get a different one beside them.
    assert other_move_sets(ranked, [twin_a, twin_b, full_context], 2) == [other]


def scored(c: Candidate, screen: str, successes: list[bool], peak: int) -> Candidate:
    c.screens[screen] = Scores(tuple(TaskScore(f"t{i}", ok, peak, 0, 0) for i, ok in enumerate(successes)))
    return c


def test_the_hedge_is_the_mildest_cut_within_the_peak_goal_of_another_move_set():
    # Tier 0's best cuts deepest (twin_a); the hedge keeps the most while staying within the goal.
    best = scored(candidate("best", [EXTRACT], [MASK]), "val", [True, True], 900)
    mild = scored(candidate("mild", [], [{"move": "clear", "classes": ["static"]}]), "val", [True, True], 1_800)
    milder = scored(
        candidate("milder", [], [{"move": "clear", "classes": ["dynamic_state"]}]), "val", [True] * 2, 2_600
    )
    broken = scored(candidate("broken", [], [{"move": "clear", "classes": None}]), "val", [True, False], 1_900)
    twin = scored(candidate("twin", [{**EXTRACT, "over": 900}], [MASK]), "val", [True, True], 1_950)
    order = [best, mild, milder, broken, twin]

    def feasible(s: Scores) -> bool:
        return s.success >= 1.0

    # Goal 0.5 of full context's 4,000: at most 2,000. `milder` is over it, `broken` loses a task, `twin` is the
    # best's own move set: the mildest left is `mild`.
    assert mildest_within(order, [best], "val", 0.5 * 4_000, feasible) is mild
    assert mildest_within(order, [best], "val", 0.7 * 4_000, feasible) is milder
    assert mildest_within(order, [best, mild], "val", 0.5 * 4_000, feasible) is None
    assert mildest_within(order, [best], "train", 0.5 * 4_000, feasible) is None  # not screened there
