"""How the search ranks candidates against full context: the selection objective as a sort key."""

from __future__ import annotations

from typing import Literal

Objective = Literal["constrained", "penalized", "success", "cost"]


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
