"""The Pareto front of (success ↑, peak tokens ↓), on the same tasks.

The one front of acon: the search selects on it and tracking plots it (`optimizer.tracking.pareto`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Protocol, TypeVar

from optimizer.jsontypes import JSONObject, JSONRecord, integer, number, optional_number, text


class Scored(Protocol):
    """Anything with the two scores of the front, and a rank among points tied on both."""

    @property
    def success(self) -> float: ...

    @property
    def peak_tokens(self) -> float: ...

    @property
    def tie_rank(self) -> tuple[int, ...]: ...


S = TypeVar("S", bound=Scored)


@dataclass(frozen=True)
class Point:
    label: str
    version: str
    kind: str  # baseline | candidate | oracle
    success: float
    peak_tokens: float
    round: int = 0
    # The tier-1 confirmation (llm agent, train confirmation tasks): peaks as the server counted them.
    confirm_success: float | None = None
    confirm_peak_tokens: float | None = None

    @property
    def tie_rank(self) -> tuple[int, ...]:
        # A baseline that ties a candidate stands for both (the candidate bought nothing), else the earliest.
        return (self.kind != "baseline", self.round)

    def to_dict(self) -> JSONObject:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: JSONRecord) -> Point:
        return cls(
            label=text(data["label"]),
            version=text(data["version"]),
            kind=text(data["kind"]),
            success=number(data["success"]),
            peak_tokens=number(data["peak_tokens"]),
            round=integer(data.get("round", 0)),
            confirm_success=optional_number(data.get("confirm_success")),
            confirm_peak_tokens=optional_number(data.get("confirm_peak_tokens")),
        )


def dominates(a: Scored, b: Scored) -> bool:
    return (a.success >= b.success and a.peak_tokens <= b.peak_tokens) and (
        a.success > b.success or a.peak_tokens < b.peak_tokens
    )


def pareto_front(points: Sequence[S]) -> list[S]:
    """The points no other point dominates, one per (success, peak tokens), by peak tokens ascending.

    Of points tied on both scores the one with the lowest `tie_rank` stands for them (the first given, among
    equal ranks): a front that listed each tie would count one trade-off several times.
    """
    front = [p for p in points if not any(dominates(q, p) for q in points if q is not p)]
    unique: dict[tuple[float, float], S] = {}
    for point in sorted(front, key=lambda p: (p.peak_tokens, -p.success, p.tie_rank)):
        unique.setdefault((point.success, point.peak_tokens), point)
    return sorted(unique.values(), key=lambda p: p.peak_tokens)


def improves_front(old: Sequence[Point], new: Sequence[Point]) -> bool:
    """Whether any new point is non-dominated by the old front and not already on it."""
    old_keys = {(p.success, p.peak_tokens) for p in old}
    return any(
        (p.success, p.peak_tokens) not in old_keys and not any(dominates(q, p) or q == p for q in old) for p in new
    )
