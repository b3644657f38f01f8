"""The report is a pure function of what the job measured: rows on the same tasks, paired comparisons,
the best baseline, acceptance, and the parts of the chosen guideline with where they came from."""

from __future__ import annotations

from dataclasses import replace

from optimizer.config import AcceptanceConfig
from optimizer.evaluate.scores import Scores, TaskScore
from optimizer.report.checks import PeerCheck
from optimizer.report.markdown import both_solved_cell, check_line, report_markdown
from optimizer.report.model import BothSolved, ChosenGuideline, Part, ReportRound, ReportRow, RoundSummary
from optimizer.search.report import ReportInputs, Row, best_baseline, both_solved, build_report, paired


def scores(*tasks: tuple[str, bool, int], recalls: int = 0) -> Scores:
    return Scores(tuple(TaskScore(t, ok, peak, recalls) for t, ok, peak in tasks))


def test_failures_that_ended_early_do_not_lower_the_comparison():
    chosen = scores(("a", True, 1800), ("b", True, 2000), ("c", True, 2400))
    seed = scores(("a", False, 500), ("b", True, 2600), ("c", True, 3000))
    result = both_solved(chosen, seed)
    assert result == BothSolved(tasks=2, chosen_peak_mean=2200, peak_mean=2800)
    assert both_solved_cell(_row_with(result)) == "2,200 vs 2,800 (2)"


def test_no_common_success_is_said_not_averaged():
    result = both_solved(scores(("a", True, 900)), scores(("a", False, 400), ("b", True, 700)))
    assert result.tasks == 0 and result.peak_mean is None
    assert both_solved_cell(_row_with(result)) == "no task"
    assert both_solved_cell(_row_with(None)) == "–"


def _row_with(both: BothSolved | None) -> ReportRow:
    report = build_report(_inputs(rows()))
    return replace(report.rows[0], both_solved=both)


def test_paired_differences_are_over_common_tasks_with_intervals():
    a = scores(("t1", True, 100), ("t2", True, 200), ("t3", True, 300))
    b = scores(("t1", True, 400), ("t2", False, 600), ("t4", True, 1))
    p = paired(a, b)
    assert p.tasks == 2 and p.peak_diff == -350 and p.success_diff == 0.5
    low, high = p.peak_diff_ci
    assert low <= -350 <= high and p.peak_ratio == 1 - 350 / 500


def rows() -> list[Row]:
    none = Row("none", "control", "reference", scores(("a", True, 1000), ("b", True, 2000)))
    keeps = Row("offload_preview", "baseline", "reference", scores(("a", True, 400), ("b", True, 900), recalls=1))
    breaks = Row("fifo", "baseline", "reference", scores(("a", False, 100), ("b", True, 200)))
    chosen = Row("chosen", "learned", "reference", scores(("a", True, 300), ("b", True, 500)), "v1")
    oracle = Row("oracle", "oracle", "reference", scores(("a", True, 200), ("b", True, 300)))
    return [chosen, none, keeps, breaks, oracle]


def test_the_best_baseline_is_the_cheapest_that_keeps_success():
    table = rows()
    assert best_baseline(table, table[1], tolerance=0.05).name == "offload_preview"  # fifo is cheaper but breaks
    assert best_baseline(table, table[1], tolerance=0.5).name == "fifo"


def test_the_report_compares_against_none_and_the_best_baseline_and_names_the_llm_parts():
    parts = [
        Part("root: offload_preview", "baseline:offload_preview", False, 0, "r"),
        Part("write extract: rules /^payment:/", "llm_rewrite", True, 1, "v1"),
    ]
    inputs = ReportInputs(
        "exp",
        "builtin",
        {"train": 2, "val": 1, "test": 2},
        ChosenGuideline("v1", "x", "llm_rewrite", path="g.md"),
        rows(),
        AcceptanceConfig(min_peak_reduction=0.5),
        tolerance=0.05,
        parts=parts,
    )
    report = build_report(inputs)
    assert report.best_baseline == "offload_preview"
    assert report.paired["best_baseline"].peak_diff == -250
    assert [p.change for p in report.llm_parts] == ["write extract: rules /^payment:/"]
    checks = report.acceptance.tiers["tier0"].checks
    assert checks["at_or_below_best_baseline"].passed and checks["peak_reduction"].value == 1 - 400 / 1500
    assert report.acceptance.passed
    text = report_markdown(report)
    assert "| oracle | reference | 2 | 1.00 |" in text and "llm_rewrite (LLM): write extract" in text
    assert "What tier 0 does not track" in text
    by_name = {r.strategy: r for r in report.rows}
    assert by_name["offload_preview"].figures.success_without_recall == 0.0
    assert (by_name["chosen"].peak_vs_none or 1) < 0.6


def test_the_report_states_the_cut_the_wall_time_and_its_mlflow_run():
    inputs = ReportInputs(
        "exp",
        "builtin",
        {"train": 2, "val": 0, "test": 2},
        ChosenGuideline("v1", "x", "tighten", path="g.md"),
        rows(),
        AcceptanceConfig(),
        tolerance=0.05,
        wall_s=125.4,
        rounds=[
            ReportRound(RoundSummary(1, 2, [], ["a", "b", "c", "d"], [], "a", True), {"tighten": 3, "llm_shorten": 1})
        ],
        mlflow={"tracking_uri": "sqlite:////j/mlflow.db", "experiment_id": "3", "run_id": "r9"},
    )
    report = build_report(inputs)
    assert report.cut is not None
    assert report.cut.vs_none == 400 / 1500 - 1 and report.cut.best_baseline == "offload_preview"
    assert report.cut.vs_best == 400 / 650 - 1
    text = report_markdown(report)
    assert (
        "**Cut:** mean peak 400 tokens vs 1,500 under `none` (-73.3%), success 1.00 vs 1.00; vs the best "
        "baseline `offload_preview` 650 (-38.5%)" in text
    )
    assert "**Wall time:** 2 min 5 s." in text and "**MLflow run:** `r9` in experiment 3" in text
    assert "| 1 | 2 | 4 | 3 tighten, 1 llm_shorten | True | a |" in text


def _inputs(table: list[Row], **acceptance) -> ReportInputs:
    return ReportInputs(
        "exp",
        "builtin",
        {"train": 2, "val": 0, "test": 2},
        ChosenGuideline("v1", "x", "tighten", path="g.md"),
        table,
        AcceptanceConfig(**acceptance),
        tolerance=0.05,
    )


def test_acceptance_compares_with_none_the_seed_and_the_best_baseline_paired():
    seed = Row("seed", "seed", "reference", scores(("a", True, 600)))  # the seed ran on one task only
    report = build_report(_inputs([*rows(), seed]))
    checks = report.acceptance.tiers["tier0"].checks
    seed_check, best = checks["at_or_below_seed"], checks["at_or_below_best_baseline"]
    assert isinstance(seed_check, PeerCheck) and isinstance(best, PeerCheck)
    assert seed_check.tasks == 1 and seed_check.value == -300
    assert best.against == "offload_preview" and best.value == -250 and best.passed
    low, high = best.paired_ci
    assert low <= -250 <= high and best.significant == (low > 0 or high < 0)
    assert "paired_ci" in checks["success_drop"].to_dict() and report.paired["seed"].tasks == 1
    assert "tier 0: chosen vs `seed` (paired, 1 tasks)" in report_markdown(report)


def test_a_result_below_a_bar_prints_fail():
    table = rows()
    table[0] = Row("chosen", "learned", "reference", scores(("a", True, 450), ("b", True, 950)), "v1")
    report = build_report(_inputs(table, min_peak_reduction=0.6))
    verdict = report.acceptance.tiers["tier0"]
    assert not report.acceptance.passed and not verdict.passed
    assert not verdict.checks["peak_reduction"].passed  # 1 - 700 / 1500 = 0.53 < 0.6
    assert not verdict.checks["at_or_below_best_baseline"].passed  # 700 mean vs offload_preview's 650
    text = report_markdown(report)
    assert "- tier0 (builtin): FAIL" in text
    assert "peak_reduction: 0.533 (bar 0.6) FAIL" in text
    assert "at_or_below_best_baseline (`offload_preview`, paired over 2 tasks): peak +50 tokens" in text


def test_a_success_drop_says_whether_it_is_significant():
    many = [(f"t{i}", True, 1000) for i in range(40)]
    none = Row("none", "control", "reference", scores(*many))
    for lost, significant in ((2, False), (12, True)):
        lossy = [(f"t{i}", i >= lost, 300) for i in range(40)]
        chosen = Row("chosen", "learned", "reference", scores(*lossy), "v1")
        report = build_report(_inputs([chosen, none], max_success_drop=0.5))
        check = report.acceptance.tiers["tier0"].checks["success_drop"].to_dict()
        assert check["pass"] and check["significant"] == significant
        low, high = check["paired_ci"]
        assert low <= check["value"] <= high


def test_rows_carry_fact_visibility_and_tier_one_behaviour_as_two_columns():
    def seen(task_id, ok, needed, visible):
        return TaskScore(task_id, ok, 500, facts_needed=needed, facts_visible=visible)

    none0 = Row("none", "control", "reference", Scores((seen("a", True, 2, 2), seen("b", True, 2, 2))))
    chosen0 = Row("chosen", "learned", "reference", Scores((seen("a", True, 2, 2), seen("b", False, 2, 1))), "v1")
    none1 = Row("none", "control", "llm", scores(("a", True, 900), ("b", False, 800)))
    chosen1 = Row("chosen", "learned", "llm", scores(("a", False, 600), ("b", False, 500)), "v1")
    report = build_report(_inputs([chosen0, none0, chosen1, none1]))
    rows = {(r.strategy, r.tier): r.to_dict() for r in report.rows}
    assert rows[("chosen", "reference")]["facts_visible"] == 0.75
    tier1 = rows[("chosen", "llm")]
    assert tier1["facts_visible"] == 0.75 and tier1["behaviour"] == {"tasks": 1, "success": 0.0}
    assert rows[("none", "llm")]["behaviour"] == {"tasks": 2, "success": 0.5}
    text = report_markdown(report)
    assert "facts visible | acted on (tier 1) |" in text
    assert "| 0.75 | 0.00 (1) |" in text and "| 1.00 | 0.50 (2) |" in text


def test_a_seed_that_solves_fewer_is_no_peak_bar_and_an_interval_above_zero_is_significant():
    many = [(f"t{i}", True, 2000 + i) for i in range(12)]
    none = Row("none", "control", "reference", scores(*[(t, ok, 4000) for t, ok, _ in many]))
    chosen = Row("chosen", "learned", "reference", scores(*many), "v1")
    # The seed fails 8 of 12 early, at a lower peak than any solving run reaches.
    seed = Row("seed", "seed", "reference", scores(*[(t, i < 4, 900) for i, (t, _, _) in enumerate(many)]))
    check = build_report(_inputs([chosen, none, seed])).acceptance.tiers["tier0"].checks["at_or_below_seed"]
    assert isinstance(check, PeerCheck) and check.value > 1000 and check.significant and check.passed
    assert "`seed` solves fewer (0.33 vs 1.00): pass" in check_line("at_or_below_seed", check)
    solving = Row("seed", "seed", "reference", scores(*[(t, True, 900) for t, _, _ in many]))
    check = build_report(_inputs([chosen, none, solving])).acceptance.tiers["tier0"].checks["at_or_below_seed"]
    assert isinstance(check, PeerCheck) and not check.passed and check.significant
    assert "significant: FAIL" in check_line("at_or_below_seed", check)


def test_a_success_drop_of_zero_prints_without_a_minus_sign():
    table = rows()
    report = build_report(_inputs(table))
    assert "-0.000" not in report_markdown(report)
