"""`tighten`: CO-step variants that cut more, one tightening each. No model; each names the one it applied.

The knobs and how each tightening turns them are the moves' own declarations (`context/moves/knobs.py`):
lower thresholds, shorter outputs (compressor caps, offload previews), fewer raw recent steps, stricter
extraction, extraction that ignores terms common to many of a result's units. A knob a move declares is
turned here with no edit to this module.
"""

from __future__ import annotations

from typing import ClassVar, Literal, Protocol, TypeVar

from optimizer.context.moves import Move
from optimizer.context.moves.knobs import TIGHTENINGS, Tightening, tightened
from optimizer.context.policy import RetentionPolicy
from optimizer.search.candidate import Proposal
from optimizer.search.proposers.base import ProposalInput, Proposer, derived, unique


def tightenings(policy: RetentionPolicy) -> list[Tightening]:
    """acon's own tightenings in their order, then any other the policy's moves declare, as they show them."""
    moves: tuple[Move, ...] = (*policy.write, *policy.history)
    declared = [turn.tightening for move in moves for knob in move.knobs for turn in knob.turns]
    return list(dict.fromkeys([*TIGHTENINGS, *declared]))


MoveT = TypeVar("MoveT", bound=Move)


class Turning(Protocol):
    """`knobs.tightened` or `knobs.loosened`: a move with a tightening's knobs turned one way."""

    def __call__(self, move: MoveT, tightening: Tightening, /) -> MoveT: ...


def each_move_turned(policy: RetentionPolicy, tightening: Tightening, turn: Turning) -> RetentionPolicy:
    """`policy` with every write and history move turned in `tightening` (each move whose knobs it names)."""
    return policy.model_copy(
        update={
            "write": tuple(turn(m, tightening) for m in policy.write),
            "history": tuple(turn(m, tightening) for m in policy.history),
        }
    )


class Tighten(Proposer):
    """One variant per tightening, each applied to every move whose knobs it turns."""

    type: Literal["tighten"] = "tighten"
    step: ClassVar[Literal["ut", "co"]] = "co"

    def propose(self, inputs: ProposalInput) -> list[Proposal]:
        parent = inputs.parent.guideline
        policy = parent.policy
        out = []
        for tightening in tightenings(policy):
            changed = each_move_turned(policy, tightening, tightened)
            if changed != policy:
                out.append(
                    Proposal(self.type, derived(parent, changed, tightening.name), rationale=tightening.rationale)
                )
        return unique(out, parent)
