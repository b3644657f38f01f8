"""The one Pareto front (success ↑, peak tokens ↓): what the search selects on and tracking plots."""

from __future__ import annotations

from optimizer.report.front import Point, dominates, improves_front, pareto_front
from optimizer.tracking.pareto import ParetoPoint, front_labels


def point(label: str, success: float, peak: float, *, kind: str = "candidate", round: int = 0) -> Point:
    return Point(label, f"v-{label}", kind, success, peak, round)


def labels(points: list[Point]) -> list[str]:
    return [p.label for p in points]


def test_dominance_needs_one_strict_improvement():
    a, b = point("a", 0.8, 2000), point("b", 0.8, 2500)
    assert dominates(a, b) and not dominates(b, a)
    assert not dominates(a, point("same", 0.8, 2000))  # equal scores: neither dominates
    assert not dominates(a, point("c", 0.9, 3000)) and not dominates(point("c", 0.9, 3000), a)


def test_front_drops_dominated_points_and_orders_by_peak():
    points = [
        point("none", 0.9, 6000, kind="baseline"),
        point("seed", 0.6, 3000),
        point("cand-1", 0.8, 2500),
        point("fifo", 0.4, 2000, kind="baseline"),
        point("worse", 0.5, 2600),
    ]
    assert labels(pareto_front(points)) == ["fifo", "cand-1", "none"]
    assert pareto_front([]) == []


def test_a_tie_is_one_point_baseline_first_then_earliest_round():
    tied = [
        point("late", 0.8, 2000, round=3),
        point("early", 0.8, 2000, round=1),
        point("fifo", 0.8, 2000, kind="baseline", round=2),
    ]
    assert labels(pareto_front(tied)) == ["fifo"]
    assert labels(pareto_front(tied[:2])) == ["early"]
    # Equal rank too (the same candidate given twice): the first given stands for both.
    twins = [point("first", 0.8, 2000), point("second", 0.8, 2000)]
    assert labels(pareto_front(twins)) == ["first"]
    assert labels(pareto_front([*twins, point("other", 0.5, 1000)])) == ["other", "first"]


def test_tracking_marks_the_search_front():
    """The plot's default front is the search's: same dominance, one label per tie (a baseline's)."""
    plotted = [
        ParetoPoint("cand", 0.8, 2000),
        ParetoPoint("fifo", 0.8, 2000, baseline=True),
        ParetoPoint("none", 0.9, 6000, baseline=True),
        ParetoPoint("worse", 0.7, 2500),
    ]
    assert front_labels(plotted) == ["fifo", "none"]
    assert front_labels(plotted[::-1]) == ["none", "fifo"]  # in the order given, as pareto/*.json had it
    kinds = {True: "baseline", False: "candidate"}
    searched = [point(p.label, p.success, p.peak_tokens, kind=kinds[p.baseline]) for p in plotted]
    assert set(labels(pareto_front(searched))) == set(front_labels(plotted))


def test_improves_front_only_for_a_new_trade_off():
    old = pareto_front([point("a", 0.8, 2000), point("b", 0.9, 4000)])
    assert not improves_front(old, [point("same-scores", 0.8, 2000)])
    assert not improves_front(old, [point("dominated", 0.7, 2500)])
    assert improves_front(old, [point("cheaper", 0.8, 1500)])
