"""`relax`: CO-step variants that cut less than their parent, one loosening each. No model.

Tier 0 is most optimistic about the deepest cuts, and every other proposer only deepens a parent that
works: in the `reach_long` jobs every tier-0-feasible candidate sat near a third of full context's peak,
the real agent rejected them all, and there was nothing between them and full context for the hedged
confirmation (`confirm_peak_goal`: the mildest cut within the goal) to ask about. Each variant undoes one
thing of its parent:

- `without_<stage><i>`: one move left out, so each move set that remains is measured on its own;
- `defer`: a write-time extraction moved to history time, so the agent reads every result whole once and
  the cut comes a step later (ACON's observation vs history compression);
- `loose_<tightening>`: every knob a tightening turns, one step back (higher thresholds, longer previews,
  more raw recent steps, looser extraction).

Off by default: under a peak objective a looser variant never outranks its parent, so it only pays for a
job that confirms the mildest cut; such an experiment names it.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from optimizer.context.moves import Extract, ExtractOld
from optimizer.context.moves.knobs import loosened
from optimizer.context.policy import RetentionPolicy
from optimizer.search.candidate import Proposal
from optimizer.search.proposers.base import ProposalInput, Proposer, derived, unique
from optimizer.search.proposers.edits import HISTORY_ORDER, inserted
from optimizer.search.proposers.tighten import each_move_turned, tightenings


class Relax(Proposer):
    """One variant per move left out, per write-time extraction deferred, and per tightening undone."""

    type: Literal["relax"] = "relax"
    step: ClassVar[Literal["ut", "co"]] = "co"
    in_default: ClassVar[bool] = False

    def propose(self, inputs: ProposalInput) -> list[Proposal]:
        parent = inputs.parent.guideline
        policy = parent.policy
        variants = [*_each_move_left_out(policy), *_deferred(policy), *_loosened(policy)]
        out = [
            Proposal(self.type, derived(parent, changed, suffix), rationale=why)
            for suffix, changed, why in variants
            if changed != policy
        ]
        return unique(out, parent)


Variant = tuple[str, RetentionPolicy, str]


def _each_move_left_out(policy: RetentionPolicy) -> list[Variant]:
    if len(policy.write) + len(policy.history) < 2:
        return []  # without its only move a guideline is full context, which every job already measures
    out: list[Variant] = []
    for stage, moves in (("write", policy.write), ("history", policy.history)):
        for i, move in enumerate(moves):
            rest = (*moves[:i], *moves[i + 1 :])
            out.append(
                (f"without_{stage}{i}", policy.model_copy(update={stage: rest}), f"{stage}[{i}] {move.move} left out")
            )
    return out


def _deferred(policy: RetentionPolicy) -> list[Variant]:
    out: list[Variant] = []
    for i, move in enumerate(policy.write):
        if not isinstance(move, Extract):
            continue
        later = ExtractOld(classes=move.classes, over=move.over, keep_last=1, select=move.select)
        changed = policy.model_copy(
            update={
                "write": (*policy.write[:i], *policy.write[i + 1 :]),
                "history": inserted(policy.history, later, HISTORY_ORDER),
            }
        )
        why = f"write[{i}] extract deferred to history time: each result is read whole once, then extracted"
        out.append(("defer", changed, why))
    return out


def _loosened(policy: RetentionPolicy) -> list[Variant]:
    out: list[Variant] = []
    for tightening in tightenings(policy):
        changed = each_move_turned(policy, tightening, loosened)
        out.append((f"loose_{tightening.name}", changed, f"one step back from {tightening.rationale}"))
    return out
