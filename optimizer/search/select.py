"""Scores, the objective, and the Pareto front of (success ↑, peak tokens ↓)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Point:
    label: str
    version: str
    kind: str  # baseline | candidate
    success: float
    peak_tokens: float
    round: int = 0
    # The tier-1 confirmation (llm agent, train confirmation tasks): peaks as the server counted them.
    # Shown beside the screen; the front itself stays on tier 0, where every candidate has a score.
    confirm_success: float | None = None
    confirm_peak_tokens: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def dominates(a: Point, b: Point) -> bool:
    return (a.success >= b.success and a.peak_tokens <= b.peak_tokens) and (
        a.success > b.success or a.peak_tokens < b.peak_tokens
    )


def pareto_front(points: Sequence[Point]) -> list[Point]:
    front = [p for p in points if not any(dominates(q, p) for q in points if q is not p)]
    unique: dict[tuple[float, float], Point] = {}
    for point in sorted(front, key=lambda p: (p.peak_tokens, -p.success, p.round)):
        unique.setdefault((point.success, point.peak_tokens), point)
    return sorted(unique.values(), key=lambda p: p.peak_tokens)


def objective(success: float, peak: float, peak_none: float, *, mode: str, lam: float) -> float:
    """ACON eq. 7 with cost = peak tokens relative to full context; `success` ranks by success first."""
    relative = peak / peak_none if peak_none > 0 else 0.0
    if mode == "success":
        return success - 1e-6 * relative
    return success - lam * relative


def improves_front(old: Sequence[Point], new: Sequence[Point]) -> bool:
    """Whether any new point is non-dominated by the old front and not already on it."""
    old_keys = {(p.success, p.peak_tokens) for p in old}
    return any(
        (p.success, p.peak_tokens) not in old_keys and not any(dominates(q, p) or q == p for q in old) for p in new
    )
