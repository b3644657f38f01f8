"""`batch`: CO-step variants that rebuild the cached prefix less often, for `objective = "cost"`.

Each variant sets the policy's `batch_tokens` (history edits wait until together they free at least that
many tokens) a step up from the parent's. Peak can only rise, so under a peak objective these never win;
they are out of the default proposers and an experiment names them when it ranks by projected cost.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from optimizer.search.candidate import Proposal
from optimizer.search.proposers.base import ProposalInput, Proposer, derived, unique


class Batch(Proposer):
    """One variant per step size above the parent's batch, only for parents with history moves."""

    type: Literal["batch"] = "batch"
    step: ClassVar[Literal["ut", "co"]] = "co"
    in_default: ClassVar[bool] = False
    sizes: tuple[int, ...] = Field((500, 2000), description="Batch sizes (tokens) to try above the parent's.")

    def propose(self, inputs: ProposalInput) -> list[Proposal]:
        parent = inputs.parent.guideline
        policy = parent.policy
        if not policy.history:
            return []
        out = [
            Proposal(
                self.type,
                derived(parent, policy.model_copy(update={"batch_tokens": size}), f"batch{size}"),
                rationale=f"history edits wait until they free {size:,} tokens at once (fewer cache breaks)",
            )
            for size in self.sizes
            if size > policy.batch_tokens
        ]
        return unique(out, parent)
