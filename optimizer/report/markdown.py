"""`report.md`: the report as a reviewer reads it, and the lines every other surface repeats from it.

`headline`, `check_line` and the row cells are shared with the terminal table (`acon optimize`) and the
MLflow run description, so the three say the same thing in the same words.
"""

from __future__ import annotations

from dataclasses import dataclass

from optimizer.report.checks import Check, Paired, PeerCheck
from optimizer.report.model import Infrastructure, Report, ReportRow
from optimizer.stats import said_interval

ROW_COLUMNS = (
    "strategy",
    "tier",
    "tasks",
    "success",
    "95% CI",
    "never recalls",
    "recalls",
    "peak mean",
    "peak 95% CI",
    "× none",
    "peak max",
    "compressor",
    "blocking",
    "peak, both solved (chosen vs this)",
    "breaks/episode",
    "$/success",
    "facts visible",
    "acted on (tier 1)",
)


def task_count(tasks: int, episodes: int | None) -> str:
    """`6`, or `6 x 2` for six tasks each run on two sampling seeds."""
    return f"{tasks} x {episodes // tasks}" if episodes and tasks and episodes > tasks else f"{tasks}"


def duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes else f"{rest} s"


def headline(report: Report) -> list[str]:
    """The lines a reviewer reads first: the cut, the acceptance verdict, the wall time, where the run is."""
    lines = []
    c = report.cut
    if c is not None:
        text = (
            f"**Cut:** mean peak {c.peak:,.0f} tokens vs {c.none_peak:,.0f} under `none`"
            + (f" ({c.vs_none:+.1%})" if c.vs_none is not None else "")
            + f", success {c.success:.2f} vs {c.none_success:.2f}"
        )
        if c.best_baseline and c.best_peak is not None and c.best_success is not None:
            text += (
                f"; vs the best baseline `{c.best_baseline}` {c.best_peak:,.0f}"
                + (f" ({c.vs_best:+.1%})" if c.vs_best is not None else "")
                + f", success {c.best_success:.2f}"
            )
        lines.append(text + " (tier 0, test split).")
    confirmation = report.confirmation
    if confirmation is not None and confirmation.verdict == "rejected":
        best = max((c.entry.figures.success for c in confirmation.candidates), default=0.0)
        lines.append(
            f"**Tier 1:** no guideline kept full context's success on validation (best {best:.2f} vs "
            f"{confirmation.none.success:.2f}); the real agent does better without compression here."
        )
    verdicts = report.acceptance.tiers
    if verdicts:
        lines.append(
            "**Acceptance:** "
            + ", ".join(f"{tier} {'PASS' if v.passed else 'FAIL'}" for tier, v in verdicts.items())
            + "."
        )
    if report.wall_s is not None:
        lines.append(f"**Wall time:** {duration(report.wall_s)}.")
    run = report.mlflow
    if run.get("run_id"):
        lines.append(
            f"**MLflow run:** `{run['run_id']}` in experiment {run.get('experiment_id')} ({run.get('tracking_uri')})."
        )
    return lines


def check_line(name: str, check: Check) -> str:
    """One acceptance check as every surface prints it (report, CLI, MLflow front page)."""
    verdict = "pass" if check.passed else "FAIL"
    if isinstance(check, PeerCheck):
        low, high = check.paired_ci
        sure = "significant" if check.significant else "not significant"
        fewer = check.solves_fewer
        why = f"; `{check.against}` solves fewer ({fewer[0]:.2f} vs {fewer[1]:.2f})" if fewer else ""
        return (
            f"{name} (`{check.against}`, paired over {check.tasks} tasks): peak {check.value:+,.0f} tokens "
            f"[{low:+,.0f}, {high:+,.0f}], {sure}{why}: {verdict}"
        )
    ci = check.evidence.paired_ci if check.evidence else None
    interval = f" [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else ""
    return f"{name}: {check.value:,.3f}{interval} (bar {check.bar:,}) {verdict}"


@dataclass(frozen=True)
class TierLines:
    """One tier's acceptance verdict in the words every surface prints."""

    tier: str
    suite: str
    verdict: str  # PASS | FAIL
    checks: tuple[str, ...]


def acceptance_lines(report: Report) -> list[TierLines]:
    return [
        TierLines(
            tier,
            verdict.suite,
            "PASS" if verdict.passed else "FAIL",
            tuple(check_line(n, c) for n, c in verdict.checks.items()),
        )
        for tier, verdict in report.acceptance.tiers.items()
    ]


def row_cells(r: ReportRow) -> list[str]:
    """One row as the Markdown table prints it, column by column (`ROW_COLUMNS`)."""
    f = r.figures
    low, high = f.success_ci
    plow, phigh = f.peak_tokens_ci
    return [
        r.strategy,
        r.tier,
        task_count(f.tasks, f.episodes),
        f"{f.success:.2f}",
        f"[{low:.2f}, {high:.2f}]",
        f"{f.success_without_recall:.2f}",
        f"{f.recall_calls}",
        f"{f.peak_tokens_mean:,.0f}",
        f"[{plow:,.0f}, {phigh:,.0f}]",
        ratio_cell(r),
        f"{f.peak_tokens_max:,}",
        f"{f.compressor_tokens:,}",
        f"{f.blocking}",
        both_solved_cell(r),
        _breaks_cell(r),
        _cost_cell(r),
        _share_cell(f.facts_visible),
        _behaviour_cell(r),
    ]


def ratio_cell(r: ReportRow) -> str:
    return f"{r.peak_vs_none:.2f}" if r.peak_vs_none is not None else "–"


def both_solved_cell(row: ReportRow) -> str:
    paired_row = row.both_solved
    if paired_row is None:
        return "–"
    if not paired_row.tasks or paired_row.chosen_peak_mean is None or paired_row.peak_mean is None:
        return "no task"
    return f"{paired_row.chosen_peak_mean:,.0f} vs {paired_row.peak_mean:,.0f} ({paired_row.tasks})"


def _breaks_cell(row: ReportRow) -> str:
    breaks = row.summary.get("cache_breaks_per_episode")
    return f"{breaks:.2f}" if breaks is not None else "–"


def _cost_cell(row: ReportRow) -> str:
    cost = row.figures.cost_per_success
    return f"{cost:.4f}" if cost is not None else "–"


def _share_cell(value: float | None) -> str:
    return f"{value:.2f}" if value is not None else "–"


def _behaviour_cell(row: ReportRow) -> str:
    acted = row.behaviour
    if not acted:
        return "–"
    return f"{_share_cell(acted.success)} ({acted.tasks})"


def report_markdown(report: Report) -> str:
    return (
        "\n".join(
            [
                *_summary(report),
                *_rows(report),
                *_comparisons(report),
                *_origin(report),
                *_selection(report),
                *_confirmation(report),
                *_rounds(report),
                *_front(report),
                *_budget(report),
                *_infrastructure(report.infrastructure),
                *_acceptance(report),
                *["", "## What tier 0 does not track", ""],
                *[f"- {item}" for item in report.tier0_limits],
            ]
        )
        + "\n"
    )


def _summary(report: Report) -> list[str]:
    sizes, chosen = report.tasks, report.chosen
    return [
        f"# acon optimize: {report.experiment}",
        "",
        f"Suite `{report.suite}`: {sizes.get('train', 0)} train tasks (candidates mined), "
        f"{sizes.get('val', 0)} validation (chosen on), {sizes.get('test', 0)} test (reported below). "
        f"Chosen guideline: `{chosen.path}` ({chosen.name}, {chosen.origin}).",
        "",
        *[f"{line}  " for line in headline(report)],
        "",
    ]


def _rows(report: Report) -> list[str]:
    lines = [
        "| " + " | ".join(ROW_COLUMNS) + " |",
        "|" + "---|" * len(ROW_COLUMNS),
        *["| " + " | ".join(row_cells(r)) + " |" for r in report.rows],
    ]
    sources = sorted({str(r.summary.get("cost_source")) for r in report.rows} - {"None"})
    return [
        *lines,
        "",
        "*never recalls*: share of tasks solved without a single recall (what an agent that never "
        "recalls would at least solve). The oracle keeps exactly what the reference needs: the floor. "
        f"*$/success*: {', '.join(sources) or 'not priced'}; *breaks*: requests that rewrote the previous one. "
        "*facts visible*: share of the needed facts the request showed when their step came (the data flow, "
        "measured at tier 0); *acted on*: of the tasks where tier 0 saw every needed fact, the share the tier-1 "
        "agent solved under the same strategy (the behaviour).",
        "",
    ]


def _comparisons(report: Report) -> list[str]:
    lines = []
    for tier, versus, best in (
        ("tier 0", report.paired, report.best_baseline),
        ("tier 1", report.paired_tier1, report.best_baseline_tier1),
    ):
        for name, p in versus.items():
            if p.tasks:
                lines.append(_paired_line(tier, best if name == "best_baseline" else name, p))
    return lines


def _paired_line(tier: str, other: str | None, p: Paired) -> str:
    low, high = p.peak_diff_ci
    slow, shigh = p.success_diff_ci
    return (
        f"- {tier}: chosen vs `{other}` (paired, {p.tasks} tasks): peak {p.peak_diff:+,.0f} tokens "
        f"[{low:+,.0f}, {high:+,.0f}], success {said_interval(p.success_diff, slow, shigh)}"
    )


def _origin(report: Report) -> list[str]:
    lines = ["", "## Where the chosen guideline came from", ""]
    for part in report.parts:
        who = f"{part.origin} (LLM)" if part.llm else part.origin
        lines.append(f"- round {part.round}, {who}: {part.change}")
    llm = report.llm_parts
    lines.append("")
    lines.append(
        f"Parts written by the LLM: {len(llm)}." if llm else "No part of the chosen guideline was written by the LLM."
    )
    det = report.deterministic
    if det:
        figures = det.figures
        lines.append(
            f"Without LLM-written parts, the best candidate of this job was `{det.name}@{det.version}`"
            + (
                f" (test: success {figures.success:.2f}, peak {figures.peak_tokens_mean:,.0f})"
                if figures.success is not None
                else ""
            )
            + "."
        )
    return lines


def _selection(report: Report) -> list[str]:
    if not report.shortlist:
        return []
    return [
        "",
        "## Selection on the validation split",
        "",
        "| candidate | origin | success | peak mean |",
        "|---|---|---|---|",
        *[
            f"| {s.name}@{s.version} | {s.origin} | {s.figures.success:.2f} | {s.figures.peak_tokens_mean:,.0f} |"
            for s in report.shortlist
        ],
    ]


def _confirmation(report: Report) -> list[str]:
    confirmation = report.confirmation
    if confirmation is None:
        return []
    none = confirmation.none
    if confirmation.verdict == "rejected":
        verdict = "**Tier 1 rejected every confirmed candidate: no guideline kept full context's success.**"
        if report.chosen.origin == "baseline:none":
            verdict += " The job chose full context (`none`): compressing these tasks cost the real agent tasks."
        else:
            verdict += f" This job (written by an earlier acon) chose `{report.chosen.version}` anyway."
    elif confirmation.verdict == "unconfirmed":
        verdict = "**The tier-1 budget ran out before any candidate was confirmed: the job chose full context.**"
    else:
        verdict = "The chosen guideline kept full context's success at tier 1."
    return [
        "",
        f"## Tier 1 on the validation split ({none.tasks} tasks)",
        "",
        verdict,
        "",
        "| candidate | origin | success | peak mean | verdict |",
        "|---|---|---|---|---|",
        f"| none | control | {none.success:.2f} | {none.peak_tokens_mean:,.0f} | |",
        *[
            f"| {c.entry.name}@{c.entry.version} | {c.entry.origin} | {c.entry.figures.success:.2f} | "
            f"{c.entry.figures.peak_tokens_mean:,.0f} | {c.rejected or 'kept'} |"
            for c in confirmation.candidates
        ],
    ]


def _rounds(report: Report) -> list[str]:
    lines = [
        "",
        "## Rounds",
        "",
        "| round | pairs | screened | by proposer | improved | best |",
        "|---|---|---|---|---|---|",
    ]
    for r in report.rounds:
        origins = ", ".join(f"{n} {o}" for o, n in r.origins.items()) or "–"
        s = r.summary
        lines.append(f"| {s.round} | {s.pairs} | {len(s.screened)} | {origins} | {s.improved} | {s.best} |")
    return [*lines, "", f"Stopped: {report.stopped}."]


def _front(report: Report) -> list[str]:
    return [
        "",
        "## Pareto front (train, screening tier)",
        "",
        "| label | success | peak mean |",
        "|---|---|---|",
        *[f"| {p.label} | {p.success:.2f} | {p.peak_tokens:,.0f} |" for p in report.pareto],
    ]


def _budget(report: Report) -> list[str]:
    b = report.budget
    return [
        "",
        "## Budget",
        "",
        f"- candidates screened: {b.candidates if b else 0}",
        f"- agent (tier-1) episodes: {b.agent_episodes if b else 0}",
        f"- compressor calls (uncached): {b.compressor_calls if b else 0}",
        f"- optimizer tokens: {b.optimizer_tokens if b else 0}",
    ]


def _infrastructure(infra: Infrastructure | None) -> list[str]:
    if infra is None:
        return []
    lines = [
        "",
        "## Infrastructure",
        "",
        f"- model calls retried: {infra.retried_calls} ({infra.retries} extra attempts)",
        f"- episodes excluded as infrastructure errors: {infra.excluded_episodes} "
        f"(plus {infra.redone_episodes} that were run again)",
        f"- malformed agent replies (the agent was asked again): {infra.malformed_agent_replies}",
        f"- optimizer calls that failed (recorded as failed proposals): {infra.failed_optimizer_calls}",
        f"- optimizer replies whose proposal was refused: {infra.refused_proposals}",
    ]
    if infra.errors_by_kind:
        lines.append(
            "- infrastructure errors by kind: " + ", ".join(f"{k} {n}" for k, n in infra.errors_by_kind.items())
        )
    return lines


def _acceptance(report: Report) -> list[str]:
    lines = ["", "## Acceptance (declared before the run)", ""]
    for tier in acceptance_lines(report):
        lines.append(f"- {tier.tier} ({tier.suite}): {tier.verdict}")
        lines += [f"  - {line}" for line in tier.checks]
    return lines
