"""An `acon optimize` job with a target, as MLflow runs: one parent, one child run per report row.

Logged once the report is written, from the report alone: the job's files are the record, and a store that
fails here costs the MLflow view, never the learned text. A resumed job logs into the same runs (the parent
is reopened, the children are keyed by row), so nothing is duplicated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from optimizer.jsontypes import JSONRecord
from optimizer.tracking.params import experiment_params, experiment_tags

if TYPE_CHECKING:
    from pathlib import Path

    from optimizer.config import ExperimentConfig
    from optimizer.report.summary import SummaryReport, TextRow
    from optimizer.tracking.base import Tracker

ROW_METRICS = (
    "facts_kept_share",
    "facts_kept_per_summary",
    "summary_tokens_mean",
    "tier0_success",
    "peak_mean",
    "tier1_success",
    "tier1_peak_mean",
)


def log_summary_job(tracker: Tracker, config: ExperimentConfig, report: SummaryReport, artifact: Path) -> str | None:
    """The parent run's id (None with tracking off): params, per-row children, the report and the text."""
    if not tracker.enabled:
        return None
    tags = experiment_tags(config, strategy=f"target:{report.target}", split="test", agent=config.optimize.screen_agent)
    with tracker.job_run("optimize-target", params=experiment_params(config, optimize=True), tags=tags) as run_id:
        for row in report.rows:
            _log_row(tracker, row)
        tracker.log_metrics(
            {
                "llm_parts": len(report.llm_parts),
                "refused_lines": len(report.refused),
                "optimizer_calls": report.optimizer.get("calls", 0),
                **{f"{name}_{key}": v["mean"] for name, pair in report.paired().items() for key, v in pair.items()},
                **({"trigger_chosen": report.trigger.chosen} if report.trigger is not None else {}),
            }
        )
        markdown = report.markdown()
        tracker.log_report(markdown, report.to_dict())
        tracker.log_artifact(artifact, "guidelines")
        tracker.set_description(_description(report))
        return run_id


def _log_row(tracker: Tracker, row: TextRow) -> None:
    data = row.to_dict()
    with tracker.child_run(f"row:{row.name}", row.name, params={"row": row.name, "version": row.version or "-"}):
        tracker.log_metrics(_numbers(data))
        if row.text is not None:
            tracker.log_text(row.text, "instructions.txt")


def _numbers(data: JSONRecord) -> dict[str, float]:
    """The row's figures, and its failed tier-1 episodes per cause (`tier1_failed_step_limit`, ...): MLflow compares
    runs on metrics, so a row that fails by running to its step cap is told from one that skips writes there."""
    values = {key: data.get(key) for key in ROW_METRICS}
    failures = data.get("tier1_failures")
    if isinstance(failures, dict):
        values |= {f"tier1_failed_{cause.replace(' ', '_')}": n for cause, n in failures.items()}
    return {key: float(v) for key, v in values.items() if isinstance(v, int | float)}


def _description(report: SummaryReport) -> str:
    """What the run page shows first: the rows' headline figures and the lines the optimizer got through."""
    lines = [f"Summary instructions for the {report.target} target ({report.suite}, {report.tasks['test']} test tasks)"]
    lines.append("")
    for row in report.rows:
        data = row.to_dict()
        kept = data.get("facts_kept_share")
        kept_text = f"facts kept {kept:.2f}, " if kept is not None else ""
        lines.append(
            f"- {row.name}: {kept_text}tier-0 success {data['tier0_success']:.2f}, peak {data['peak_mean']:,.0f}"
        )
    lines += ["", f"LLM-written lines that survived selection: {len(report.llm_parts)}"]
    lines += [f"- {line}" for line in report.llm_parts]
    return "\n".join(lines)
