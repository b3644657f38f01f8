"""The proposer protocol: what every proposer is given, and the one verb it has.

A proposer is a pydantic model (its fields are its settings, `type` selects it in the union) that
turns a parent candidate and the evidence about it into new guidelines. Deterministic proposers read
the provenance diffs and the policy; LLM proposers also get the optimizer model through `llm`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from optimizer.agent.episode import Episode
from optimizer.context.guideline import Guideline
from optimizer.context.policy import RetentionPolicy
from optimizer.mining.pair_diff import PairDiff
from optimizer.search.candidate import Candidate, Proposal
from optimizer.world.task import Task

if TYPE_CHECKING:
    from optimizer.search.proposers.llm import OptimizerLM


@dataclass(frozen=True)
class Pair:
    """A task full context solved and a candidate's compressed context did not, with the diff of why."""

    full: Episode
    compressed: Episode
    diff: PairDiff
    task: Task | None = None

    def source_text(self, entry_id: int | None) -> tuple[str, str | None] | None:
        """The raw output (and its tool) of an entry of the compressed episode."""
        if entry_id is None:
            return None
        for entry in self.compressed.entries:
            if entry.id == entry_id and entry.kind == "result":
                return self.compressed.text(entry.raw), entry.call.name if entry.call else None
        return None


@dataclass(frozen=True)
class ProposalInput:
    parent: Candidate
    pairs: Sequence[Pair]  # what the parent lost
    successes: Sequence[Episode] = ()  # tasks the parent solved that full context solved too
    others: Sequence[Candidate] = ()  # other good candidates of the search (grafting material)
    round: int = 1
    seed: int = 0
    llm: OptimizerLM | None = field(default=None, repr=False)


class Proposer(BaseModel, ABC):
    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str
    # `ut`: proposals that fix what failed (run on each parent with its pairs); `co`: proposals that cut
    # more from what works (run on the best candidates after the UT step).
    step: ClassVar[Literal["ut", "co"]] = "ut"
    uses_llm: ClassVar[bool] = False
    # Run when a config names no proposers. Off for a proposer that only pays under one objective, so that
    # adding it changes no existing job's candidates.
    in_default: ClassVar[bool] = True

    @abstractmethod
    def propose(self, inputs: ProposalInput) -> list[Proposal]:
        """New candidate guidelines (or failed proposals with their reason); never raises on bad model output."""


def derived(parent: Guideline, policy: RetentionPolicy, suffix: str, **updates: str) -> Guideline:
    """A child guideline named after its parent's root and the change; `updates`: its instruction texts
    (`history`, `observation`) where they change too. No proposer decides how recall is listed: a child lists it
    as its parent does, also when the proposer built its policy afresh."""
    root = parent.name.split("+")[0]
    policy = policy.model_copy(update={"recall_tool": parent.policy.recall_tool})
    return parent.model_copy(update={"policy": policy, "name": f"{root}+{suffix}", **updates})


def unique(proposals: Sequence[Proposal], parent: Guideline) -> list[Proposal]:
    """Drop proposals identical to the parent or to an earlier proposal."""
    seen = {parent.version}
    out = []
    for proposal in proposals:
        version = proposal.guideline.version if proposal.guideline is not None else None
        if version is not None and version in seen:
            continue
        if version is not None:
            seen.add(version)
        out.append(proposal)
    return out
