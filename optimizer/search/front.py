"""Ranking and the Pareto front of (success ↑, peak tokens ↓), on the same tasks.

The one front of acon: the search selects on it and tracking plots it (`optimizer.tracking.pareto`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal, Protocol, TypeVar

Objective = Literal["constrained", "penalized", "success", "cost"]


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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


def rank_key(
    success: float,
    peak: float,
    *,
    none_success: float,
    none_peak: float,
    objective: Objective,
    lam: float,
    tolerance: float,
    cost: float | None = None,
    none_cost: float | None = None,
) -> tuple[float, ...]:
    """Sort key, larger is better.

    `constrained`: a candidate whose success is within `tolerance` of full context's beats any that is not;
    among those, the lower peak wins (the question a user asks: how few tokens keep success?); among the
    rest, higher success. `penalized`: ACON eq. 7, success − λ · peak / peak(none). `success`: success
    first, then peak. `cost`: as `constrained`, with projected cost per success (relative to full context's)
    in place of peak, so a move that lowers the peak but rebuilds the cached prefix often can lose; a
    candidate with no projected cost (or no success) ranks last among its group.
    """
    relative = peak / none_peak if none_peak > 0 else 0.0
    if objective == "cost":
        feasible = success >= none_success - tolerance - 1e-9
        spent = -(cost / none_cost if none_cost else cost) if cost is not None else float("-inf")
        return (1.0, spent, success, -relative) if feasible else (0.0, success, spent, -relative)
    if objective == "constrained":
        feasible = success >= none_success - tolerance - 1e-9
        return (1.0, -relative, success) if feasible else (0.0, success, -relative)
    if objective == "success":
        return (success, -relative)
    return (success - lam * relative, success)


def improves_front(old: Sequence[Point], new: Sequence[Point]) -> bool:
    """Whether any new point is non-dominated by the old front and not already on it."""
    old_keys = {(p.success, p.peak_tokens) for p in old}
    return any(
        (p.success, p.peak_tokens) not in old_keys and not any(dominates(q, p) or q == p for q in old) for p in new
    )
