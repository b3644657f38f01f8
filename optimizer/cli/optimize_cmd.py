"""`acon optimize`: learn a guideline; prints the Pareto table and the test-split report."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from optimizer.cli.console import log_line
from optimizer.cli.run_cmd import err, fmt, out, progress_bar
from optimizer.locking import exclusive

if TYPE_CHECKING:
    from optimizer.config import ExperimentConfig
    from optimizer.report.model import Report
    from optimizer.report.summary import SummaryReport
    from optimizer.tracking.outage import Guarded


def _log(message: str) -> None:
    # One line whatever the terminal's width: a warning read from a CI log or grep stays whole.
    err.print(log_line(f"{time.strftime('%H:%M:%S')} acon:", message), soft_wrap=True)


def optimize(
    experiment: Path = typer.Argument(..., help="Experiment config (TOML)."),
    resume: bool = typer.Option(False, "--resume", help="Continue a killed job in its output directory."),
    out_dir: Path | None = typer.Option(None, "--out", help="Job directory (default: the config's `out`)."),
) -> None:
    """Run the optimization loop and write report.md / report.json to the job directory."""
    from optimizer.config import load_experiment
    from optimizer.search.job import OptimizationJob
    from optimizer.tracking import check_caught_up, tracker_for

    config = load_experiment(experiment)
    if out_dir is not None:
        config = config.model_copy(update={"out": str(out_dir)})
    started = time.perf_counter()
    # Held from before the job object claims the directory until its last write: a second `acon optimize` on
    # the same --out (with or without --resume) is refused instead of interleaving its writes with this one's.
    if config.optimize.target is not None:
        _optimize_target(config, resume, started)
        return
    tracking: Guarded | None = None

    @contextlib.contextmanager
    def track() -> Iterator[Guarded | None]:  # opened by the job once its endpoints answer
        nonlocal tracking
        with tracker_for(config, log=_log) as tracking:
            yield tracking

    with exclusive(config.out_dir, hint="wait for it to finish or use another --out", log=_log):
        job = OptimizationJob(config, resume=resume, log=_log, progress=progress_bar)
        report = job.run(track=track)
    out.print(pareto_table(report))
    out.print(report_table(report))
    for line in verdict_lines(report):
        out.print(line)
    out.print(f"report: {config.out_dir / 'report.md'}  ({time.perf_counter() - started:.0f} s)")
    check_caught_up(tracking, f"run `acon optimize {experiment} --resume`")


def verdict_lines(report: Report) -> list[str]:
    """One line per tier: its acceptance verdict and every check, as report.md words them."""
    from optimizer.report.markdown import acceptance_lines

    return [f"acceptance {tier.tier}: {tier.verdict} — {'; '.join(tier.checks)}" for tier in acceptance_lines(report)]


def _optimize_target(config: ExperimentConfig, resume: bool, started: float) -> None:
    from optimizer.search.summary_job import SummaryJob
    from optimizer.tracking import tracker_from_config
    from optimizer.tracking.summary_run import log_summary_job

    with exclusive(config.out_dir, hint="wait for it to finish or use another --out", log=_log):
        job = SummaryJob(config, resume=resume, log=_log, progress=progress_bar)
        tracker = tracker_from_config(config)  # an unreachable store is refused before any model call
        report = job.run()
        run_id = log_summary_job(tracker, config, report, Path(report.artifact))
    if run_id is not None:
        out.print(f"MLflow: run {run_id}, one child run per row (acon ui {config.out_dir})")
    out.print(target_table(report))
    failing = report.failure_lines()
    if failing:
        out.print("failed tier-1 episodes showing each cause (an episode may show several):")
        for line in failing:
            out.print(f"  {line}")
    out.print("at equal peak (the default row that peaks least while at least as high as learned):")
    for line in report.equal_peak_lines():
        out.print(f"  {line}")
    out.print(f"LLM-written lines that survived selection ({len(report.llm_parts)}):")
    for line in report.llm_parts:
        out.print(f"  + {line}")
    refused = report.refused
    out.print(f"refused optimizer lines ({len(refused)}):")
    for refusal in refused:
        out.print(f"  - {refusal.candidate}: {refusal.line!r} ({refusal.reason})")
    out.print(f"learned text: {report.artifact}  (acon export {config.out_dir} --format {report.target})")
    out.print(f"report: {config.out_dir / 'report.md'}  ({time.perf_counter() - started:.0f} s)")


def target_table(report: SummaryReport) -> Table:
    tier1 = any(r.tier1 is not None for r in report.rows)
    table = Table(
        title=f"Summary instructions for the {report.target} target, test split ({report.tasks['test']} tasks, "
        f"{report.suite}): learned vs the target's default and the seed"
    )
    columns = [
        "text",
        "version",
        "facts kept",
        "per summary",
        "false claims",
        "invented values",
        "restated task",
        "summary tokens",
        "tier-0 success",
    ]
    for column in [*columns, "95% CI", "peak mean", *(["tier-1 success"] if tier1 else [])]:
        table.add_column(column, justify="left" if column in ("text", "version") else "right")
    for r in report.rows:
        low, high = r.tier0_ci
        per = r.per_summary()
        cells = [
            r.name,
            r.version or "–",
            f"{r.screen.kept}/{r.screen.needed}" if r.screen is not None else "–",
            f"{per:.2f}" if per is not None else "–",
            f"{r.screen.claimed} of {len(r.screen.summaries)}" if r.screen is not None else "–",
            f"{r.screen.inventing} of {len(r.screen.summaries)}" if r.screen is not None else "–",
            f"{r.screen.restating} of {len(r.screen.summaries)}" if r.screen is not None else "–",
            fmt(r.screen.summary_tokens) if r.screen is not None else "–",
            f"{r.tier0.success:.2f}",
            f"[{low:.2f}, {high:.2f}]",
            fmt(r.tier0.peak_mean),
        ]
        if tier1:
            cells.append(f"{r.tier1.success:.2f}" if r.tier1 is not None else "–")
        table.add_row(*cells)
    table.caption = (
        f"chosen {report.search.chosen} on {report.chosen_on} · default: {report.default_source} · "
        "facts kept: needed literals the summaries kept (screen) · false claims: summaries saying a step not yet "
        "taken was done · invented values: summaries stating an id or amount no message held · tier 0: the "
        "reference agent" + (f" · {report.trigger.describe()}" if report.trigger is not None else "")
    )
    return table


def pareto_table(report: Report) -> Table:
    table = Table(title="Candidates on the train split (success ↑, peak tokens ↓)")
    for column in ("candidate", "version", "round", "success", "peak mean", "llm success", "llm peak"):
        table.add_column(column, justify="left" if column in ("candidate", "version") else "right")
    front = {p.version for p in report.pareto}
    points = sorted(report.points, key=lambda p: p.peak_tokens)
    shown = [p for p in points if p.version in front or p.kind == "baseline"][:30]
    for point in shown:
        mark = " *" if point.version in front else ""
        confirmed = point.confirm_success is not None
        table.add_row(
            point.label + mark,
            point.version,
            str(point.round),
            f"{point.success:.2f}",
            fmt(point.peak_tokens),
            f"{point.confirm_success:.2f}" if point.confirm_success is not None else "–",
            fmt(point.confirm_peak_tokens) if confirmed else "–",
        )
    table.caption = (
        f"* on the front · {len(points)} screened, front and baselines shown · tier 0 (reference "
        "agent); llm: tier-1 confirmation with the model as agent, peaks from the server's usage"
    )
    return table


# The Markdown report's columns (`optimizer.report.markdown.ROW_COLUMNS`) a terminal has room for, some under a
# shorter name.
SHOWN_COLUMNS = (
    "strategy",
    "tier",
    "tasks",
    "success",
    "95% CI",
    "never recalls",
    "peak mean",
    "× none",
    "peak max",
    "compressor",
    "blocking",
    "peak, both solved (chosen vs this)",
)
SHORT_NAMES = {"peak, both solved (chosen vs this)": "peak, both solved"}
TABLE_COLUMNS = tuple(SHORT_NAMES.get(column, column) for column in SHOWN_COLUMNS)


def report_table(report: Report) -> Table:
    from optimizer.report.markdown import ROW_COLUMNS, row_cells

    table = Table(
        title=f"Test split ({report.tasks['test']} tasks): chosen guideline vs every baseline and the oracle "
        f"({report.suite})"
    )
    for column in TABLE_COLUMNS:
        table.add_column(column, justify="left" if column == "strategy" else "right")
    for r in report.rows:
        # The Markdown's cells, with counts grouped by thousands as every other terminal table shows them.
        cells = dict(zip(ROW_COLUMNS, row_cells(r), strict=True))
        cells |= {"tasks": fmt(r.figures.tasks), "blocking": fmt(r.figures.blocking)}
        table.add_row(*(cells[column] for column in SHOWN_COLUMNS))
    table.caption = (
        f"never recalls: tasks solved without a recall · peak, both solved: chosen vs this row on the "
        f"tasks both solved · LLM-written parts of the chosen guideline: {len(report.llm_parts)}"
    )
    return table


def register(app: typer.Typer) -> None:
    app.command("optimize")(optimize)
