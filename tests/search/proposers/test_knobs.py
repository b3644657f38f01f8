"""Move knobs: each move declares what a search may turn (name, range, direction), and the proposers and the
provoked parent read that declaration, so a knob added to a move is turned with no edit to them."""

from __future__ import annotations

from dataclasses import replace

import pytest

from optimizer.context.guideline import SEED_GUIDELINE, RetentionPolicy, read_guideline
from optimizer.context.moves import Clear, Compress, DropOld, Extract, ExtractOld, Mask, Offload, SummarizeOld
from optimizer.context.moves.knobs import (
    FEWER,
    LOWER,
    STRICT,
    TIGHTENINGS,
    Knob,
    Pin,
    Scale,
    Shift,
    Tightening,
    Turn,
    loosened,
    provoked,
    tightened,
)
from optimizer.search.candidate import Candidate
from optimizer.search.proposers import Graft, Tighten
from optimizer.search.proposers.base import ProposalInput

SEED = read_guideline(SEED_GUIDELINE)
MOVES = (Extract, Offload, Compress, ExtractOld, Mask, DropOld, Clear, SummarizeOld)


def candidate(**policy) -> Candidate:
    guideline = SEED.model_copy(update={"policy": RetentionPolicy.model_validate(policy), "name": "parent"})
    return Candidate(guideline, "seed", 0)


def variants(parent: Candidate) -> dict[str, RetentionPolicy]:
    proposals = Tighten().propose(ProposalInput(parent, ()))
    return {p.guideline.name.rsplit("+", 1)[1]: p.guideline.policy for p in proposals}


@pytest.mark.parametrize("move", MOVES, ids=lambda cls: cls.__name__)
def test_every_knob_names_a_number_of_its_move_and_turns_within_its_range(move):
    instance = move()
    assert instance.knobs, "a move the search cannot tune"
    for knob in instance.knobs:
        value = knob.read(instance)
        inside = knob.low <= value and (knob.high is None or value <= knob.high)
        for turn in knob.turns:
            moved = knob.stepped(value, turn.step)
            # A default outside the range (a mask's `over` of 0: every result) is left where it is.
            assert knob.low <= moved and (knob.high is None or moved <= knob.high) if inside else moved == value


@pytest.mark.parametrize(
    ("knob", "step", "value", "expected"),
    [
        (Knob("n", 128, None, "down"), Scale(0.6), 1000, 600),
        (Knob("n", 128, None, "down"), Scale(0.6), 150, 128),  # not below the range
        (Knob("n", 128, None, "down"), Scale(0.6), 100, 100),  # already below it: left
        (Knob("n", 1, 20, "up"), Shift(1), 20, 20),
        (Knob("n", 1, 20, "up"), Shift(-1), 3, 2),  # a step away from compression
        (Knob("n", 0.0, 1.0, "up", digits=2), Shift(0.25), 0.8, 1.0),
        (Knob("n", 0.1, 1.0, "down", digits=2), Scale(0.5), 0.15, 0.1),
        (Knob("n", 128, None, "down"), Scale(0.1, bound=64), 1000, 100),  # a bound of its own, past the range
        (Knob("n", 1, None, "down"), Pin(1), 0, 1),
    ],
)
def test_a_step_moves_toward_its_bound_and_never_past_it(knob, step, value, expected):
    assert knob.stepped(value, step) == expected


def test_a_following_turn_moves_only_beside_a_leading_one():
    lead, follower = Tightening("both", "x"), Knob("select.min_words", 1, 20, "up")
    share = Knob("select.max_word_share", 0.1, 1.0, "down", (Turn(lead, Scale(0.5)),), digits=2)
    follows = replace(follower, turns=(Turn(lead, Shift(-1), follows=True),))

    class Paired(Extract):
        knobs = (share, follows)

    moved = tightened(Paired(select={"min_words": 3}), lead)
    assert (moved.select.max_word_share, moved.select.min_words) == (0.5, 2)
    floor = Paired(select={"min_words": 3, "max_word_share": 0.1})
    assert tightened(floor, lead) is floor


def test_a_knob_added_to_a_move_is_turned_by_tighten(monkeypatch):
    parent = candidate(history=[{"move": "mask", "keep_last": 2, "polling": 4, "over": 500}])
    before = variants(parent)
    assert set(before) == {"lower", "fewer"} and all(p.history[0].polling == 4 for p in before.values())

    # `polling`: re-mask every N steps; fewer steps between polls masks sooner. Declared on the move only.
    sooner = Tightening("poll", "re-mask one step sooner")
    monkeypatch.setattr(Mask, "knobs", (*Mask.knobs, Knob("polling", 1, None, "down", (Turn(sooner, Shift(1)),))))
    after = variants(parent)
    assert list(after) == ["lower", "fewer", "poll"]  # acon's own first, then the new one
    assert after["poll"].history[0].polling == 3 and after["poll"].history[0].keep_last == 2

    # Joining an existing tightening: the same variant now turns both knobs.
    monkeypatch.setattr(Mask, "knobs", (*Mask.knobs[:2], Knob("polling", 1, None, "down", (Turn(FEWER, Shift(1)),))))
    fewer = variants(parent)["fewer"].history[0]
    assert (fewer.keep_last, fewer.polling) == (1, 3)


def test_the_provoked_parent_sets_each_trigger_its_move_declares():
    clear = provoked(Clear(trigger_tokens=4000, keep_last=0, over=900))
    assert (clear.trigger_tokens, clear.keep_last, clear.over) == (0, 1, 90)
    extract = provoked(Extract(over=400))
    assert extract.over == 64 and extract.select == Extract(over=400).select
    assert provoked(DropOld(keep_last=5)).keep_last == 1


def test_graft_keeps_a_borrowed_hiding_move_above_its_declared_floor():
    parent = candidate(write=[{"move": "offload", "over": 800}])
    other = candidate(history=[{"move": "mask", "keep_last": 2, "over": 20}])
    proposals = Graft().propose(ProposalInput(parent, (), others=[other]))
    masks = [m for p in proposals for m in p.guideline.policy.history if isinstance(m, Mask)]
    assert masks and masks[0].over == 200


def test_tighten_proposes_acon_tightenings_in_their_declared_order():
    parent = candidate(
        write=[{"move": "extract", "over": 1000, "select": {"min_words": 3, "head": 2}}, {"move": "offload"}],
        history=[{"move": "summarize", "over": 2000, "keep_last": 2, "max_tokens": 250}],
    )
    assert list(variants(parent)) == [t.name for t in TIGHTENINGS]


def test_loosening_takes_each_tightening_one_step_back_within_the_range():
    move = Extract(over=1000, select={"min_words": 3, "head": 2, "top_ratio": 0.5})
    for tightening in (LOWER, STRICT):
        assert loosened(tightened(move, tightening), tightening).model_dump() == move.model_dump()
    strict = loosened(move, STRICT).select
    assert (strict.min_words, strict.head, strict.top_ratio) == (2, 3, 0.25)
    assert loosened(move, LOWER).over == 1666  # x1/0.6: no bound above, whatever the tightening's bound was
    floor = Extract(over=1000, select={"min_words": 1, "head": 200, "top_ratio": 0.0})
    assert loosened(floor, STRICT) is floor  # every knob already at the looser end of its range
    pinned = Tightening("pinned", "x")

    class Pinned(Mask):
        knobs = (Knob("keep_last", 1, None, "down", (Turn(pinned, Pin(1)),)),)

    mask = Pinned(keep_last=3)
    assert tightened(mask, pinned).keep_last == 1 and loosened(mask, pinned) is mask  # a pin has no way back
