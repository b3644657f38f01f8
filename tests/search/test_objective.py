"""`objective = "cost"`: candidates ranked by projected cost per success within the success tolerance."""

from __future__ import annotations

from optimizer.config import OptimizeConfig
from optimizer.evaluate.scores import Scores, TaskScore
from optimizer.search.ranking import rank_key

NONE = {"none_success": 1.0, "none_peak": 4000.0, "lam": 0.3, "tolerance": 0.05, "none_cost": 0.02}


def key(objective: str, success: float, peak: float, cost: float | None) -> tuple[float, ...]:
    return rank_key(success, peak, objective=objective, cost=cost, **NONE)  # type: ignore[arg-type]


def test_cost_and_peak_objectives_disagree_where_a_lower_peak_costs_more():
    # `masked` keeps less but rebuilds the cached prefix often; `cleared` keeps more and stays cached.
    masked, cleared = (1.0, 2500.0, 0.026), (1.0, 3500.0, 0.021)
    assert key("constrained", *masked) > key("constrained", *cleared)
    assert key("penalized", *masked) > key("penalized", *cleared)
    assert key("cost", *cleared) > key("cost", *masked)


def test_cost_objective_keeps_the_success_tolerance_and_ranks_unpriced_candidates_last():
    cheap_but_failing = (0.5, 1000.0, 0.001)
    assert key("cost", 1.0, 4000.0, 0.05) > key("cost", *cheap_but_failing)
    assert key("cost", 1.0, 4000.0, 0.05) > key("cost", 1.0, 1000.0, None)


def test_projected_cost_per_success_is_over_the_tasks_kept():
    scores = Scores(
        (
            TaskScore("a", True, 100, cost=0.01),
            TaskScore("b", False, 100, cost=0.03),
            TaskScore("c", True, 100, cost=0.02),
        )
    )
    assert abs(scores.projected_cost_per_success - 0.03) < 1e-12
    assert abs(scores.on(["a", "c"]).projected_cost_per_success - 0.015) < 1e-12
    assert scores.on(["b"]).projected_cost_per_success is None
    assert Scores((TaskScore("a", True, 100),)).projected_cost_per_success is None


def test_the_search_config_accepts_the_cost_objective():
    assert OptimizeConfig(selection={"objective": "cost"}).selection.objective == "cost"
