"""The final report: a pure function of what the job measured.

Every row is one strategy on the same test tasks: the chosen guideline, the seed, full context, every
baseline and the oracle (the floor). Comparisons against `none` and against the best baseline are
paired over tasks, with bootstrap intervals on the differences. The report also says which parts of the
chosen guideline came from the LLM, what the deterministic proposers alone reached, how much success
rests on recalls, and what tier 0 does not track.

`build_report` returns the typed tree of `optimizer.report.model`; `report.markdown` and `report.file` render it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from optimizer.evaluate.scores import Scores, TaskScore
from optimizer.report.checks import Acceptance, BarCheck, Check, Paired, PairedEvidence, PeerCheck, TierVerdict
from optimizer.report.front import Point
from optimizer.report.model import (
    SUMMARY_KEYS,
    TIER0_LIMITS,
    Behaviour,
    BothSolved,
    Budget,
    ChosenGuideline,
    Confirmation,
    Cut,
    Deterministic,
    Figures,
    Infrastructure,
    Part,
    Report,
    ReportRound,
    ReportRow,
    ShortlistEntry,
)
from optimizer.stats import paired_bootstrap_diff

if TYPE_CHECKING:
    from optimizer.config import AcceptanceConfig


@dataclass(frozen=True)
class Row:
    """One strategy's scores on the test tasks, before the report compares it with the others."""

    name: str
    kind: str  # learned | seed | control | baseline | oracle | deterministic
    tier: str  # reference | llm
    scores: Scores
    version: str | None = None


@dataclass(frozen=True)
class ReportInputs:
    experiment: str
    suite: str
    tasks: Mapping[str, int]  # train / val / test sizes
    chosen: ChosenGuideline  # without its row: the report adds it
    rows: Sequence[Row]
    acceptance: AcceptanceConfig
    tolerance: float
    rounds: Sequence[ReportRound] = ()
    stopped: str = ""
    points: Sequence[Point] = ()
    front: Sequence[Point] = ()
    shortlist: Sequence[ShortlistEntry] = ()
    parts: Sequence[Part] = ()
    deterministic: Deterministic | None = None
    budget: Budget | None = None
    infrastructure: Infrastructure | None = None
    wall_s: float | None = None  # the job's own running time, over every resume
    mlflow: Mapping[str, str] | None = None  # tracking_uri, experiment_id, run_id
    confirmation: Confirmation | None = None


def build_report(inputs: ReportInputs) -> Report:
    rows = {(r.name, r.tier): r for r in inputs.rows}
    tier0 = [r for r in inputs.rows if r.tier == "reference"]
    chosen = rows.get(("chosen", "reference"))
    none = rows.get(("none", "reference"))
    best = best_baseline(tier0, none, inputs.tolerance) if none else None
    table = []
    for r in inputs.rows:
        entry = _row(r, chosen, none)
        screened = rows.get((r.name, "reference"))
        if r.tier != "reference" and screened is not None:
            # The data flow is tier 0's measure; the tier-1 row adds the behaviour on top of it.
            entry = entry.seen_at_tier0(screened.scores.facts_visible, behaviour(r.scores, screened.scores))
        table.append(entry)
    # The real agent's verdict on the same test tasks, where the job ran it: chosen against full context and
    # against the tier-1 baseline with the lowest peak that keeps full context's tier-1 success.
    chosen1, none1 = rows.get(("chosen", "llm")), rows.get(("none", "llm"))
    best1 = best_baseline([r for r in inputs.rows if r.tier == "llm"], none1, inputs.tolerance) if none1 else None
    chosen_row = _row(chosen, None, none) if chosen else None
    return Report(
        experiment=inputs.experiment,
        suite=inputs.suite,
        tasks=dict(inputs.tasks),
        chosen=replace(inputs.chosen, row=chosen_row),
        rows=tuple(table),
        best_baseline=best.name if best else None,
        paired=_versus(chosen, (("none", none), ("seed", rows.get(("seed", "reference"))), ("best_baseline", best))),
        parts=tuple(inputs.parts),
        deterministic=inputs.deterministic,
        shortlist=tuple(inputs.shortlist),
        rounds=tuple(inputs.rounds),
        stopped=inputs.stopped,
        pareto=tuple(inputs.front),
        points=tuple(inputs.points),
        budget=inputs.budget,
        infrastructure=inputs.infrastructure,
        tier0_limits=TIER0_LIMITS,
        wall_s=inputs.wall_s,
        mlflow=dict(inputs.mlflow or {}),
        best_baseline_tier1=best1.name if best1 else None,
        paired_tier1=_versus(chosen1, (("none", none1), ("best_baseline", best1))),
        acceptance=acceptance(inputs, rows, best),
        cut=cut(chosen, none, best),
        confirmation=inputs.confirmation,
    )


def _versus(chosen: Row | None, others: Sequence[tuple[str, Row | None]]) -> dict[str, Paired]:
    if chosen is None:
        return {}
    return {name: paired(chosen.scores, other.scores) for name, other in others if other is not None}


def cut(chosen: Row | None, none: Row | None, best: Row | None) -> Cut | None:
    """The headline: the chosen guideline's tier-0 mean peak and success against `none` and the best baseline."""
    if chosen is None or none is None:
        return None
    peak, success = chosen.scores.peak_mean, chosen.scores.success
    headline = Cut(
        peak=peak,
        success=success,
        none_peak=none.scores.peak_mean,
        none_success=none.scores.success,
        vs_none=_change(peak, none.scores.peak_mean),
    )
    if best is None:
        return headline
    return replace(
        headline,
        best_baseline=best.name,
        best_peak=best.scores.peak_mean,
        best_success=best.scores.success,
        vs_best=_change(peak, best.scores.peak_mean),
    )


def _change(value: float, reference: float) -> float | None:
    return value / reference - 1 if reference else None


def best_baseline(rows: Sequence[Row], none: Row, tolerance: float) -> Row | None:
    """The fixed baseline with the lowest mean peak among those keeping success within the tolerance."""
    keeping = [r for r in rows if r.kind == "baseline" and r.scores.success >= none.scores.success - tolerance - 1e-9]
    return min(keeping, key=lambda r: r.scores.peak_mean) if keeping else None


def paired(a: Scores, b: Scores) -> Paired:
    """Mean differences a − b over the tasks both have, with 95 % bootstrap intervals. A task run on several
    sampling seeds counts once, by its mean over them: two seeds of one task are not independent evidence."""
    a_success, b_success = a.success_by_task(), b.success_by_task()
    a_peak, b_peak = a.peak_by_task(), b.peak_by_task()
    common = [task_id for task_id in a_success if task_id in b_success]
    if not common:
        return Paired(0)
    peak = paired_bootstrap_diff([a_peak[t] for t in common], [b_peak[t] for t in common])
    success = paired_bootstrap_diff([a_success[t] for t in common], [b_success[t] for t in common])
    other_peak = sum(b_peak[t] for t in common) / len(common)
    return Paired(
        tasks=len(common),
        peak_diff=peak[0],
        peak_diff_ci=(peak[1], peak[2]),
        peak_ratio=(1 + peak[0] / other_peak) if other_peak else None,
        success_diff=success[0],
        success_diff_ci=(success[1], success[2]),
    )


def _by_task_and_seed(scores: Scores) -> list[tuple[tuple[str, int], TaskScore]]:
    """Each episode keyed by its task and which of that task's episodes it is: pooled runs keep seed order, so
    the same key in two pooled scores is the same task on the same seed."""
    seen: dict[str, int] = {}
    keyed = []
    for t in scores.tasks:
        seen[t.task_id] = seen.get(t.task_id, -1) + 1
        keyed.append(((t.task_id, seen[t.task_id]), t))
    return keyed


def behaviour(tier1: Scores, tier0: Scores) -> Behaviour:
    """Of the tasks where tier 0 saw every needed fact in the request when its step came, the share the
    tier-1 agent solved under the same strategy: the behaviour layer, apart from the data flow.

    A loss here is the model not acting on what it was shown; a loss in visibility is compression's.
    """
    visible = tier0.all_visible()
    acted = [t.success for t in tier1.tasks if t.task_id in visible]
    return Behaviour(tasks=len(acted), success=sum(acted) / len(acted) if acted else None)


def _row(row: Row, chosen: Row | None, none: Row | None) -> ReportRow:
    ratio = row.scores.peak_mean / none.scores.peak_mean if none is not None and none.scores.peak_mean else None
    return ReportRow(
        strategy=row.name,
        kind=row.kind,
        tier=row.tier,
        version=row.version,
        figures=Figures.of(row.scores),
        summary={k: row.scores.summary.get(k) for k in SUMMARY_KEYS},
        peak_vs_none=ratio,
        both_solved=both_solved(chosen.scores, row.scores) if chosen is not None and row is not chosen else None,
    )


def both_solved(chosen: Scores, other: Scores) -> BothSolved:
    """Mean peak tokens of both strategies over the tasks both of them solved.

    A failed episode often ends early, before its largest context, so a strategy that breaks tasks can
    show a lower mean peak than one that solves them; on the tasks both solved, peaks compare like for like.
    """
    solved = {key: t.peak_tokens for key, t in _by_task_and_seed(chosen) if t.success}
    pairs = [(solved[key], t.peak_tokens) for key, t in _by_task_and_seed(other) if t.success and key in solved]
    if not pairs:
        return BothSolved(tasks=0, chosen_peak_mean=None, peak_mean=None)
    return BothSolved(
        tasks=len(pairs),
        chosen_peak_mean=sum(c for c, _ in pairs) / len(pairs),
        peak_mean=sum(o for _, o in pairs) / len(pairs),
    )


def acceptance(inputs: ReportInputs, rows: Mapping[tuple[str, str], Row], best: Row | None) -> Acceptance:
    """Each declared bar against `none`, the seed and the best baseline, paired over common tasks.

    The point estimate decides pass or fail, as declared; the paired 95 % interval stands beside it and
    says whether a difference is significant, because on 16 tasks a mean can pass by luck.
    """
    bars = inputs.acceptance
    tiers: dict[str, TierVerdict] = {}
    for tier in ("reference", "llm"):
        chosen, none = rows.get(("chosen", tier)), rows.get(("none", tier))
        if chosen is None or none is None:
            continue
        checks: dict[str, Check] = dict(_bar_checks(bars, chosen, none))
        for name, other in (
            ("seed", rows.get(("seed", tier))),
            ("best_baseline", best if tier == "reference" else None),
        ):
            check = _peer_check(chosen, other, "seed" if name == "seed" else None, inputs.tolerance)
            if check is not None:
                checks[f"at_or_below_{name}"] = check
        name = "tier0" if tier == "reference" else "tier1"
        tiers[name] = TierVerdict(suite=inputs.suite, checks=checks, passed=all(c.passed for c in checks.values()))
    return Acceptance(declared=bars.model_dump(), tiers=tiers, passed=all(t.passed for t in tiers.values()))


def _bar_checks(bars: AcceptanceConfig, chosen: Row, none: Row) -> dict[str, BarCheck]:
    vs_none = paired(chosen.scores, none.scores)
    drop = none.scores.success - chosen.scores.success
    reduction = 1 - chosen.scores.peak_mean / none.scores.peak_mean if none.scores.peak_mean else 0.0
    evidence = PairedEvidence(
        paired_ci=_negated(vs_none.success_diff_ci) if vs_none.tasks else None,
        significant=bool(vs_none.tasks) and vs_none.success_diff_ci[1] < 0,
    )
    return {
        "success_drop": BarCheck(drop, bars.max_success_drop, drop <= bars.max_success_drop + 1e-9, evidence),
        "peak_reduction": BarCheck(reduction, bars.min_peak_reduction, reduction >= bars.min_peak_reduction),
        "blocking": BarCheck(chosen.scores.blocking, bars.max_blocking, chosen.scores.blocking <= bars.max_blocking),
    }


def _peer_check(chosen: Row, other: Row | None, against: str | None, tolerance: float) -> PeerCheck | None:
    if other is None:
        return None
    versus = paired(chosen.scores, other.scores)
    if not versus.tasks:
        return None
    # A strategy that fails tasks often ends them early, below any peak a solving one reaches: its
    # peak is no bar for a guideline that solves more (the seed solving 3 of 8 is not a competitor).
    solves_fewer = other.scores.success < chosen.scores.success - tolerance - 1e-9
    low, high = versus.peak_diff_ci
    return PeerCheck(
        value=versus.peak_diff,
        bar=0,
        passed=solves_fewer or versus.peak_diff <= 1e-9,
        paired_ci=versus.peak_diff_ci,
        tasks=versus.tasks,
        against=against or other.name,
        significant=low > 0 or high < 0,
        solves_fewer=(other.scores.success, chosen.scores.success) if solves_fewer else None,
    )


def _negated(ci: tuple[float, float]) -> tuple[float, float]:
    return (0.0 - ci[1] + 0.0, 0.0 - ci[0] + 0.0)  # + 0.0: no "-0.000" in the report
