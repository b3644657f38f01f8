"""The parent run's description: the report's headline and every failure pair, linked (pure text).

A reviewer opens the job's run first. Its description says what was chosen, the cut against `none` and
the best baseline, each acceptance bar, the wall time, and lists the pairs (full context solved, the
candidate's compressed context failed) with links to the pair's diff and to both of its traces, so
nobody has to know that the evidence sits in round N → Artifacts → `pairs/`. Links are the UI's own
routes, relative to the page (`#/experiments/...`), so they work on whatever host serves the store.
MLflow keeps a description in one tag of at most 8,000 characters: pairs that do not fit are counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote

from optimizer.jsontypes import JSONObject
from optimizer.report.markdown import acceptance_lines, headline
from optimizer.report.model import Report

MAX_CHARS = 8000  # MLflow's limit on a tag value; the description is the `mlflow.note.content` tag
RESERVED = 200


@dataclass(frozen=True)
class PairLink:
    """One failure pair as the store records it on the compressed episode's trace."""

    pair: str  # "<task> · <strategy>"
    missing: str
    checkpoint: str
    compressed_trace: str
    full_trace: str | None
    diff_run: str | None
    diff_path: str | None
    near_miss: bool = False  # the compressed run succeeded, only through a recall


VIEW_KEY = "acon-review"
# The runs list a reviewer needs: the few metrics that matter (the UI shows none by default).
# The job run's metrics name their split (`train_` for the rounds, `test_` for the report); an evaluation's
# child run holds one split, named in the run's name, so its metrics go unprefixed.
VIEW_COLUMNS = (
    "train_success",
    "train_peak_tokens_mean",
    "test_success",
    "test_peak_tokens_mean",
    "pairs_total",
    "success",
    "peak_tokens_mean",
    "compressor_tokens",
    "blocking",
)


def review_view(run_id: str) -> JSONObject:
    """The shared view state: those columns, the job's run expanded."""
    return {"selectedColumns": [f"metrics.`{name}`" for name in VIEW_COLUMNS], "runsExpanded": {run_id: True}}


def artifact_url(experiment_id: str, run_id: str, path: str) -> str:
    return f"#/experiments/{experiment_id}/runs/{run_id}/artifactPath/{quote(path)}"


def trace_url(experiment_id: str, trace_id: str) -> str:
    return f"#/experiments/{experiment_id}/traces/{trace_id}"


def description(report: Report, pairs: Sequence[PairLink], *, experiment_id: str, run_id: str) -> str:
    chosen = report.chosen
    # No heading: the run page folds the description after a few lines, and a heading would fill them.
    lines = [
        f"**{report.experiment}: chosen** `{chosen.name}@{chosen.version}` ({chosen.origin}, round {chosen.round})  ",
        *[f"{line}  " for line in headline(report)],
        "",
    ]
    lines += _bars(report)
    lines += [
        "",
        f"Full report: [report.md]({artifact_url(experiment_id, run_id, 'report.md')}) · "
        f"[all runs, the metrics that matter](#/experiments/{experiment_id}/runs?viewStateShareKey={VIEW_KEY}) · "
        f"[seed → chosen diff]({artifact_url(experiment_id, run_id, 'diffs/seed-to-chosen.html')}) · "
        f"[test split plot]({artifact_url(experiment_id, run_id, 'pareto/test.png')})",
        "",
    ]
    text = "\n".join(lines)
    if not pairs:
        return text + "\nNo failure pair: no candidate lost a task that full context solved.\n"
    # The chosen guideline's pairs first (what would ship), then the other candidates' and the baselines';
    # within each, real failures before near misses, which only cost a recall.
    chosen_label = f"guideline:{chosen.name}@{chosen.version}"
    pairs = sorted(pairs, key=lambda p: (not p.pair.endswith(f" · {chosen_label}"), p.near_miss))
    header = [
        "## Failures to review",
        "",
        "Full context solved these tasks; under the strategy named, the compressed context failed them "
        "(*failed*) or solved them only through a recall (*near miss*).",
        "",
        "| pair | outcome | missing | lost at | diff | traces |",
        "|---|---|---|---|---|---|",
    ]
    text += "\n" + "\n".join(header)
    shown = 0
    for link in pairs:
        row = "\n" + _row(link, experiment_id)
        if len(text) + len(row) + RESERVED > MAX_CHARS:  # room left for the line counting the rest
            break
        text += row
        shown += 1
    if shown < len(pairs):
        text += (
            f"\n\n{len(pairs) - shown} more pair(s) did not fit here: filter the traces on tag "
            "`acon.pair.role = compressed`, or open each round's `pairs/` artifacts."
        )
    return text + "\n"


def _bars(report: Report) -> list[str]:
    return [f"- {tier.tier}: {tier.verdict}: {'; '.join(tier.checks)}" for tier in acceptance_lines(report)]


def _row(link: PairLink, experiment_id: str) -> str:
    diff = (
        f"[diff]({artifact_url(experiment_id, link.diff_run, link.diff_path)})"
        if link.diff_run and link.diff_path
        else "–"
    )
    traces = f"[compressed]({trace_url(experiment_id, link.compressed_trace)})"
    if link.full_trace:
        traces += f" · [full]({trace_url(experiment_id, link.full_trace)})"
    outcome = "near miss" if link.near_miss else "failed"
    return f"| {_cell(link.pair)} | {outcome} | {_cell(link.missing)} | {_cell(link.checkpoint)} | {diff} | {traces} |"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
