"""Which candidates the real agent confirms: near-twins by tier 0 share one confirmation, a different move set
gets the other."""

from __future__ import annotations

from optimizer.context.guideline import read_guideline
from optimizer.search.candidate import Candidate, distinct_moves, move_signature, other_move_sets
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
