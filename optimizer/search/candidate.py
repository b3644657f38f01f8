"""A candidate guideline and what is known about it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from optimizer.context.guideline import Guideline


@dataclass
class Candidate:
    guideline: Guideline
    origin: str  # seed | patch | tighten | llm-ut | llm-co | gepa
    round: int
    parent: str | None = None  # parent guideline version
    rationale: str = ""
    rejected: str | None = None  # validator verdict, when rejected before screening
    # Tier-0 screening and tier-1 confirmation on the train split.
    screen: dict[str, Any] | None = None
    confirm: dict[str, Any] | None = None

    @property
    def version(self) -> str:
        return self.guideline.version

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["guideline"] = self.guideline.to_markdown()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Candidate:
        fields = dict(data)
        fields["guideline"] = Guideline.from_markdown(data["guideline"], source="state")
        return cls(**fields)


@dataclass
class Proposal:
    """What a proposer returned: a guideline, or the reason it could not produce one."""

    origin: str
    guideline: Guideline | None
    rationale: str = ""
    error: str | None = None
    optimizer_tokens: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
