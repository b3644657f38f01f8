"""`graft`: compose moves. A parent gains a move it lacks, taken from another good candidate of the
search (a baseline's offload, a rule-learned extraction) or from the default of each move. No model.

This is how the search walks the action space from the baselines it was warm-started with: the best
fixed strategy plus an extraction, an extraction plus a clear of old results, and so on. Grafts run also
when nothing failed, so the search explores even on suites where the parent loses no task.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from optimizer.context.extraction import Selection
from optimizer.context.guideline import Guideline
from optimizer.context.moves import Clear, Extract, ExtractOld, HistoryMove, Mask, Move, Offload, WriteMove
from optimizer.context.moves.knobs import graft_floored
from optimizer.context.policy import RetentionPolicy
from optimizer.search.candidate import Proposal
from optimizer.search.proposers.base import ProposalInput, Proposer, derived, unique
from optimizer.search.proposers.edits import HISTORY_ORDER, WRITE_ORDER, inserted

DEFAULT_WRITE: tuple[WriteMove, ...] = (
    Extract(over=300, select=Selection()),
    Offload(over=400, head_tokens=120, tail_tokens=40),
)
DEFAULT_HISTORY: tuple[HistoryMove, ...] = (
    Clear(trigger_tokens=0, keep_last=2, over=200),
    ExtractOld(),
    Mask(keep_last=2, recoverable=True, over=200),
)


class Graft(Proposer):
    """Children of the parent with one move it lacks."""

    type: Literal["graft"] = "graft"
    max_children: int = Field(4, ge=1, le=20, description="Grafts proposed per parent.")

    def propose(self, inputs: ProposalInput) -> list[Proposal]:
        parent = inputs.parent.guideline
        policy = parent.policy
        has_write: set[str] = {m.move for m in policy.write}
        has_history: set[str] = {m.move for m in policy.history}
        library_write: list[Move] = [m for other in inputs.others for m in other.guideline.policy.write]
        library_write += DEFAULT_WRITE
        # Another candidate's history move keeps the size floor its knobs declare (`graft_floor`).
        library_history: list[Move] = [
            graft_floored(m) for other in inputs.others for m in other.guideline.policy.history
        ]
        library_history += DEFAULT_HISTORY
        out: list[Proposal] = []
        stages = (
            ("write", library_write, has_write, WRITE_ORDER),
            ("history", library_history, has_history, HISTORY_ORDER),
        )
        for stage, library, present, order in stages:
            for move in library:
                if move.move in present or move.uses_compressor:
                    continue
                present.add(move.move)
                new = policy.model_copy(update={stage: inserted(getattr(policy, stage), move, order)})
                out.append(self._child(parent, new, move, stage))
        return unique(out, parent)[: self.max_children]

    def _child(self, parent: Guideline, policy: RetentionPolicy, move: Move, stage: str) -> Proposal:
        settings = ", ".join(f"{k}={v}" for k, v in move.model_dump(exclude={"move", "classes", "select"}).items())
        return Proposal(
            self.type,
            derived(parent, RetentionPolicy.model_validate(policy.model_dump()), f"{move.move}"),
            rationale=f"add {stage} move {move.move} ({settings})",
        )
