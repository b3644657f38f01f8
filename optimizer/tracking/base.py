"""The tracking interface. This base class is tracking switched off: every method does nothing.

`MlflowTracker` implements it; the optimizer, `acon run` and `acon compare` only see `Tracker`, so a
disabled tracker needs no MLflow import and no store.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from optimizer.agent.episode import Episode
from optimizer.context.guideline import Guideline
from optimizer.jsontypes import JSON, JSONRecord
from optimizer.tracking.pareto import ParetoPoint

if TYPE_CHECKING:
    from optimizer.context.prompt_registry import RegisteredGuideline
    from optimizer.mining.pair_diff import PairDiff
    from optimizer.tracking.front_page import PairLink

# A tag's value as a run takes it: written as its text (a count as digits); None leaves the tag unset.
TagValue = str | int | None


class Tracker:
    """Runs, metrics, artifacts, traces and registered guidelines of one job; disabled here."""

    enabled = False
    trace_screens = True  # whether an optimize job's tier-0 screens are traced (`[tracking] traces = "all"`)

    @contextlib.contextmanager
    def job_run(
        self, name: str, *, params: Mapping[str, JSON] | None = None, tags: Mapping[str, str] | None = None
    ) -> Iterator[str | None]:
        """The parent run of a job (`optimize`, `compare`, `run`), reopened when the job resumes.

        Yields the run id. Inside it, `child_run` nests and every `log_*` call lands in the innermost run
        of the calling thread. On exit the run is finished (failed on an exception) and traces flushed.
        """
        yield None

    @contextlib.contextmanager
    def child_run(
        self,
        key: str,
        name: str | None = None,
        *,
        params: Mapping[str, JSON] | None = None,
        tags: Mapping[str, str] | None = None,
        times_ms: tuple[int, int] | None = None,
    ) -> Iterator[str | None]:
        """A nested run, found again by `key` under the same parent (a resumed round is not duplicated).

        `times_ms` (start, end; epoch ms) for work that ran before it is logged, so the run shows how long the
        work took rather than how long logging it took."""
        yield None

    def active_run_id(self) -> str | None:
        return None

    def run_ref(self) -> dict[str, str]:
        """Where the job run lives (`tracking_uri`, `experiment_id`, `run_id`); empty when tracking is off."""
        return {}

    def set_description(self, markdown: str, *, run_id: str | None = None) -> None:
        """The run's description (what the run page shows first)."""

    def share_view(self, key: str, state: JSONRecord) -> None:
        """A runs-list view (columns, expanded runs) the UI opens at `#/experiments/ID/runs?viewStateShareKey=KEY`."""

    def pair_links(self) -> list[PairLink]:
        """Every failure pair marked on a trace in this experiment."""
        return []

    def log_params(self, params: Mapping[str, JSON], *, run_id: str | None = None) -> None:
        """Params (values become strings); nested mappings are flattened as `a.b`."""

    def log_metrics(
        self, metrics: Mapping[str, float | int | bool | None], step: int | None = None, *, run_id: str | None = None
    ) -> None:
        """Numeric metrics at `step` (the round); None values are skipped, one point per key and step."""

    def set_tags(self, tags: Mapping[str, TagValue], *, run_id: str | None = None) -> None:
        """Tags on the run (suite, split, agent, strategy, tier, ...)."""

    def log_text(self, text: str, artifact_file: str) -> None:
        """Any text artifact; the UI previews .md, .html, .json, .txt, .yaml and images."""

    def log_artifact(self, path: Path, artifact_path: str | None = None) -> None:
        """Attach a local file (e.g. an episodes.jsonl)."""

    def log_guideline(self, guideline: Guideline, round: int | None = None) -> str | None:
        """The guideline file as `guidelines/[rNN-]<name>-<version>.md`; returns the artifact path."""
        return None

    def log_guideline_diff(self, old: Guideline, new: Guideline, name: str | None = None) -> str | None:
        """Side-by-side HTML diff of two guideline versions under `diffs/`; returns the artifact path."""
        return None

    def log_pair_diff(self, task_id: str, html: str, markdown: str, round: int | None = None) -> str | None:
        """A failure pair's side-by-side diff (HTML) and summary (Markdown) under `pairs/[rNN/]`; returns the
        HTML's artifact path."""
        return None

    def mark_pair(
        self, diff: PairDiff, full: Episode, compressed: Episode, diff_path: str | None, split: str | None = None
    ) -> None:
        """Tag both traces of a pair (missing literals, checkpoint, the diff in the active run, the other
        trace) and give the compressed one a `missing_facts` feedback. An episode not traced yet is traced
        first (a screen's, under `traces = "reviewed"`), tagged with `split`."""

    def log_table(self, rows: Sequence[JSONRecord], artifact_file: str) -> None:
        """Rows as an MLflow table (`.json`), browsable and loadable with `mlflow.load_table`."""

    def log_pareto(
        self,
        points: Sequence[ParetoPoint],
        front: Sequence[str] | None = None,
        round: int | None = None,
        *,
        name: str | None = None,
        title: str | None = None,
    ) -> str | None:
        """`pareto/<rNN|final|name>.png`, success vs peak tokens (front computed when not given), plus the
        points as JSON beside it; returns the PNG's artifact path."""
        return None

    def log_report(self, markdown: str, data: JSONRecord | None = None) -> None:
        """The final report: `report.md`, and `report.json` when `data` is given."""

    def trace_episode(
        self, episode: Episode, tags: Mapping[str, str] | None = None, *, started_at: float | None = None
    ) -> str | None:
        """One trace per episode, linked to the active run; returns the trace id (None if skipped).

        `started_at` (epoch seconds) defaults to "the episode just ended". An episode already traced in
        this run (same task, strategy, strategy version and agent) is not traced again.
        """
        return None

    def register_guideline(
        self,
        guideline: Guideline,
        *,
        alias: str | None = None,
        tags: Mapping[str, str] | None = None,
        message: str | None = None,
    ) -> RegisteredGuideline | None:
        """Register a kept guideline version (history and observation prompts), once per hash; `tags` and the
        commit `message` apply to a new version."""
        return None

    def set_best(
        self, guideline: Guideline, *, prompt_tags: Mapping[str, str] | None = None
    ) -> RegisteredGuideline | None:
        """Alias `best` on the two prompts of this guideline version; `prompt_tags` on both prompts and, so
        the version a user opens first says the same, on the chosen version too."""
        return None

    def tag_guideline(self, guideline: Guideline, tags: Mapping[str, str]) -> None:
        """Tags on the registered versions of a guideline (e.g. `acon.status = rejected`)."""

    def flush(self) -> None:
        """Wait for asynchronously exported traces."""
