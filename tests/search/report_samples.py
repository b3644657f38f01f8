"""A report with every part filled in (tier-1 rows, rounds, front, budget, faults), for codec and renderer tests."""

from __future__ import annotations

from optimizer.config import AcceptanceConfig
from optimizer.evaluate.scores import Scores, TaskScore
from optimizer.report.front import Point
from optimizer.report.model import (
    Budget,
    ChosenGuideline,
    Confirmation,
    ConfirmedCandidate,
    Deterministic,
    Figures,
    Infrastructure,
    Part,
    Report,
    ReportRound,
    RoundSummary,
    ShortlistEntry,
)
from optimizer.search.report import ReportInputs, Row, build_report


def scores(*tasks: tuple[str, bool, int], recalls: int = 0) -> Scores:
    return Scores(tuple(TaskScore(t, ok, peak, recalls) for t, ok, peak in tasks))


def full_report() -> Report:
    chosen = scores(("a", True, 300), ("b", True, 500))
    rows = [
        Row("chosen", "learned", "reference", chosen, "v1"),
        Row("none", "control", "reference", scores(("a", True, 1000), ("b", True, 2000))),
        Row("offload_preview", "baseline", "reference", scores(("a", True, 400), ("b", True, 900), recalls=1)),
        Row("fifo", "baseline", "reference", scores(("a", False, 100), ("b", True, 200))),
        Row("seed", "seed", "reference", scores(("a", True, 350), ("b", False, 500)), "v0"),
        Row("oracle", "oracle", "reference", scores(("a", True, 200), ("b", True, 300))),
        Row("chosen", "learned", "llm", scores(("a", True, 310), ("b", False, 520)), "v1"),
        Row("none", "control", "llm", scores(("a", True, 1010), ("b", True, 2020))),
    ]
    points = [
        Point("none", "none", "baseline", 1.0, 1500.0),
        Point("cand", "v1", "candidate", 1.0, 400.0, 1, 0.5, 410.0),
    ]
    summary = RoundSummary(1, 3, ["v0"], ["v1"], [{"version": "v9", "reason": "bad"}], "v1", True, None, [])
    return build_report(
        ReportInputs(
            experiment="exp",
            suite="builtin",
            tasks={"train": 4, "val": 2, "test": 2},
            chosen=ChosenGuideline("v1", "g", "llm_rewrite", 1, "/job/guidelines/v1.md"),
            rows=rows,
            acceptance=AcceptanceConfig(),
            tolerance=0.05,
            rounds=[ReportRound(summary, {"llm_rewrite": 1})],
            stopped="no improvement",
            points=points,
            front=points[1:],
            shortlist=[ShortlistEntry("v1", "g", "llm_rewrite", Figures.of(chosen))],
            parts=[Part("root: seed", "seed", False, 0, "v0"), Part("write extract", "llm_rewrite", True, 1, "v1")],
            deterministic=Deterministic("v0", "seed", False, Figures.of(chosen)),
            budget=Budget(candidates=3, agent_episodes=2, compressor_calls=10, optimizer_tokens=1000),
            infrastructure=Infrastructure(1, 2, 0, 1, {"timeout": 1}, 0, 0, 0),
            wall_s=75.0,
            mlflow={"tracking_uri": "sqlite:////job/mlflow.db", "experiment_id": "1", "run_id": "abc"},
            confirmation=Confirmation(
                "rejected",
                Figures.of(scores(("a", True, 1000), ("a", True, 1010))),
                (
                    ConfirmedCandidate(
                        ShortlistEntry(
                            "v1", "g", "llm_rewrite", Figures.of(scores(("a", True, 300), ("a", False, 320)))
                        ),
                        "tier-1 success 0.50 vs none 1.00",
                    ),
                ),
            ),
        )
    )
