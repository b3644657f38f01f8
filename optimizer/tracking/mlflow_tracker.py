"""`Tracker` on MLflow: explicit run ids (safe from worker threads), resumable jobs, idempotent children.

Every write names its run, so nothing depends on MLflow's thread-local active run. The job run is also
made MLflow's fluent active run on the thread that opens it, so MLflow-aware code inside the job (autolog,
`dspy.GEPA` with `use_mlflow`) logs under it; child runs are not (see `_entered`).

Resuming: the parent run id of each job is kept in `<job_dir>/mlflow_run.json`; children are found by
their `acon.key` tag; a metric point already logged for a key and step is not logged again; an episode
already traced in a run is not traced again. Runs created by this process need none of those lookups.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import posixpath
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import mlflow
from mlflow import MlflowClient
from mlflow.entities import LifecycleStage, Metric, Param, RunStatus, RunTag
from mlflow.tracing.client import TracingClient
from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID, MLFLOW_RUN_NOTE

import optimizer.tracking.store as stores
from optimizer import interrupts
from optimizer.agent.episode import Episode
from optimizer.context.guideline import Guideline
from optimizer.context.prompt_registry import BEST, GuidelineRegistry, RegisteredGuideline
from optimizer.jsontypes import JSON, JSONRecord
from optimizer.tracking.base import TagValue, Tracker
from optimizer.tracking.diffs import guideline_diff
from optimizer.tracking.front_page import PairLink
from optimizer.tracking.lost_traces import count_lost_traces, losses
from optimizer.tracking.params import flatten, tier_of
from optimizer.tracking.parent_runs import ParentRuns, remember_run
from optimizer.tracking.pareto import ParetoPoint, front_labels, plot_png
from optimizer.tracking.store import Store, patient_sqlite
from optimizer.tracking.tables import to_columns
from optimizer.tracking.traces import (
    CHECKPOINT_TAG,
    DIFF_RUN_TAG,
    DIFF_TAG,
    EPISODE_TAG,
    KIND_TAG,
    MISSING_TAG,
    OTHER_TAG,
    PAIR_TAG,
    ROLE_TAG,
    episode_key,
    log_episode_trace,
    mark_pair,
    pair_tags,
)

if TYPE_CHECKING:
    from optimizer.config import TraceMode
    from optimizer.mining.pair_diff import PairDiff

log = logging.getLogger(__name__)

KEY_TAG = "acon.key"
JOB_TAG = "acon.job"
BATCH = 100  # MLflow's limit on params or tags per log_batch call
MAX_TAG_CHARS = 8000
LOST_TAG = "acon.lost_trace_writes"  # on the job run: trace writes MLflow dropped in this process


def ensure_experiment(client: MlflowClient, name: str, artifact_location: str | None) -> str:
    """The experiment's id, creating it with an explicit artifact location (restoring it if deleted)."""
    experiment = client.get_experiment_by_name(name)
    if experiment is None:
        try:
            return client.create_experiment(name, artifact_location=artifact_location)
        except mlflow.exceptions.MlflowException:
            experiment = client.get_experiment_by_name(name)  # another process created it meanwhile
            if experiment is None:
                raise
    if experiment.lifecycle_stage == LifecycleStage.DELETED:
        client.restore_experiment(experiment.experiment_id)
    return experiment.experiment_id


def _safe_name(text: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in text) or "_"


def _round_prefix(round: int | None) -> str:
    return "" if round is None else f"r{round:02d}-"


class MlflowTracker(Tracker):
    """Tracking into one MLflow experiment. Sets the process-wide tracking URI: one store per process."""

    enabled = True

    def __init__(
        self,
        store: Store,
        job_dir: Path,
        experiment: str,
        *,
        traces: TraceMode = "reviewed",
        prompt_prefix: str | None = None,
    ) -> None:
        from optimizer.context.prompt_registry import prompt_prefix as default_prefix

        self.store = store
        self.job_dir = job_dir.resolve()
        self.experiment = experiment
        self.traces = traces != "none"
        # Tier-0 screens are most of a job's episodes, and their traces most of its time on a sqlite store (each
        # waits on the store's lock); the reviewed mode traces a job's screens only where a pair marks them.
        self.trace_screens = traces == "all"
        self.job_dir.mkdir(parents=True, exist_ok=True)
        # Spans reach sqlite in batches of this many (MLflow's default, 5, costs a third more per trace). Read
        # when MLflow's tracer provider starts, so it only applies if no span was made before in the process.
        os.environ.setdefault("MLFLOW_ASYNC_TRACE_LOGGING_MAX_SPAN_BATCH_SIZE", "100")
        patient_sqlite(store)  # before the URI is set: the export pool is built when it changes
        count_lost_traces()
        self._lost_reported = losses().count  # the count is per process; this tracker reports its own
        _point_mlflow_at(store.uri)
        self.client = MlflowClient(tracking_uri=store.uri, registry_uri=store.uri)
        self.tracing = TracingClient(tracking_uri=store.uri)  # trace tags and assessments
        self.experiment_id = ensure_experiment(self.client, experiment, store.artifact_location)
        mlflow.set_experiment(experiment_id=self.experiment_id)
        self.registry = GuidelineRegistry(self.client, prompt_prefix or default_prefix(experiment))
        self._lock = threading.RLock()
        self._local = threading.local()
        self._job_run_id: str | None = None
        self._fresh: set[str] = set()
        self._params: dict[str, dict[str, str]] = {}
        self._points: dict[str, dict[str, set[int]]] = {}
        self._children: dict[str, dict[str, str]] = {}
        self._traced: dict[str, set[str]] = {}
        self._status: dict[str, str] = {}  # the status this process last gave each run
        self._trace_ids: dict[str, str] = {}  # episode key -> trace id
        self._marked: set[tuple[str | None, str | None]] = set()

    # Runs -------------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def job_run(
        self, name: str, *, params: Mapping[str, JSON] | None = None, tags: Mapping[str, str] | None = None
    ) -> Iterator[str | None]:
        if self._job_run_id is not None:
            raise RuntimeError(f"job run {self._job_run_id} is already open; nest with child_run instead")
        state = ParentRuns.read(self.job_dir)
        run_id = state.run_for(self.store.uri, self.experiment_id, name) if state else None
        if run_id is not None and not self._reopen(run_id, tags):
            run_id = None
        if run_id is None:
            run_id = self._create(name, {JOB_TAG: name, **(tags or {})})
            remember_run(
                self.job_dir,
                tracking_uri=self.store.uri,
                experiment_id=self.experiment_id,
                experiment=self.experiment,
                job=name,
                run_id=run_id,
            )
        self._job_run_id = run_id
        try:
            with self._entered(run_id, params, fluent=True):
                yield run_id
        finally:
            self.flush()
            self._job_run_id = None

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
        parent = self._run(None)
        with self._lock:
            children = self._children_of(parent)
            run_id = children.get(key)
            if run_id is None:
                tags = {MLFLOW_PARENT_RUN_ID: parent, KEY_TAG: key, **(tags or {})}
                run_id = self._create(name or key, tags, start_ms=times_ms[0] if times_ms else None)
                children[key] = run_id
        with self._entered(run_id, params, fluent=False, end_ms=times_ms[1] if times_ms else None):
            yield run_id

    def active_run_id(self) -> str | None:
        stack = self._stack()
        return stack[-1] if stack else self._job_run_id

    def run_ref(self) -> dict[str, str]:
        if self._job_run_id is None:
            return {}
        return {"tracking_uri": self.store.uri, "experiment_id": self.experiment_id, "run_id": self._job_run_id}

    def set_description(self, markdown: str, *, run_id: str | None = None) -> None:
        if len(markdown) > MAX_TAG_CHARS:
            raise ValueError(f"a run description holds at most {MAX_TAG_CHARS} characters, got {len(markdown)}")
        self.client.set_tag(self._run(run_id), MLFLOW_RUN_NOTE, markdown)

    def share_view(self, key: str, state: JSONRecord) -> None:
        # The UI's "share view" keeps a view in this experiment tag; a link with the key opens it.
        self.client.set_experiment_tag(self.experiment_id, f"mlflow.sharedViewState.{key}", json.dumps(state))

    def pair_links(self) -> list[PairLink]:
        if not self.traces:
            return []
        self.flush()
        links, token = [], None
        while True:
            page = self.tracing.search_traces(
                locations=[self.experiment_id],
                include_spans=False,
                max_results=500,
                page_token=token,
                filter_string=f"tags.`{ROLE_TAG}` = 'compressed'",
                order_by=["timestamp_ms ASC"],
            )
            for trace in page:
                tags = trace.info.tags
                links.append(
                    PairLink(
                        pair=tags.get(PAIR_TAG, ""),
                        missing=tags.get(MISSING_TAG, ""),
                        checkpoint=tags.get(CHECKPOINT_TAG, ""),
                        compressed_trace=trace.info.trace_id,
                        full_trace=tags.get(OTHER_TAG),
                        diff_run=tags.get(DIFF_RUN_TAG),
                        diff_path=tags.get(DIFF_TAG),
                        near_miss=tags.get(KIND_TAG) == "near_miss",
                    )
                )
            token = page.token
            if not token:
                return links

    @contextlib.contextmanager
    def _entered(
        self, run_id: str, params: Mapping[str, JSON] | None, *, fluent: bool, end_ms: int | None = None
    ) -> Iterator[None]:
        """Push the run for this thread; on exit set its status, writing only when it changes.

        Only the job run becomes MLflow's fluent active run: re-entering a child (a round, a candidate)
        then costs no store write at all, which matters because each sqlite write is a commit.
        """
        if params:
            self.log_params(params, run_id=run_id)
        stack = self._stack()
        stack.append(run_id)
        if fluent:
            mlflow.start_run(run_id=run_id, nested=True)
            self._status[run_id] = RunStatus.to_string(RunStatus.RUNNING)
        status = RunStatus.to_string(RunStatus.FINISHED)
        try:
            yield
        except KeyboardInterrupt:
            status = RunStatus.to_string(RunStatus.KILLED)
            raise
        except BaseException:
            status = RunStatus.to_string(RunStatus.FAILED)
            raise
        finally:
            stack.pop()
            active = mlflow.active_run()
            if fluent and active is not None and active.info.run_id == run_id:
                mlflow.end_run(status)
            elif self._status.get(run_id) != status or end_ms is not None:
                self.client.set_terminated(run_id, status, end_time=end_ms)
            self._status[run_id] = status

    def _create(self, name: str, tags: Mapping[str, str], start_ms: int | None = None) -> str:
        tags = {k: str(v) for k, v in tags.items()}
        run = self.client.create_run(self.experiment_id, run_name=name, tags=tags, start_time=start_ms)
        with self._lock:
            self._fresh.add(run.info.run_id)
            self._status[run.info.run_id] = RunStatus.to_string(RunStatus.RUNNING)
        return run.info.run_id

    def _reopen(self, run_id: str, tags: Mapping[str, str] | None) -> bool:
        """Whether the job run `run_id` can be resumed (exists, not deleted, this experiment); counts it."""
        try:
            run = self.client.get_run(run_id)
        except mlflow.exceptions.MlflowException:
            return False
        if run.info.lifecycle_stage == LifecycleStage.DELETED or run.info.experiment_id != self.experiment_id:
            return False
        resumes = int(run.data.tags.get("acon.resumes", "0")) + 1
        self.set_tags({**(tags or {}), "acon.resumes": resumes}, run_id=run_id)
        return True

    def _children_of(self, parent: str) -> dict[str, str]:
        if parent not in self._children:
            found: dict[str, str] = {}
            if parent not in self._fresh:
                token = None
                while True:
                    page = self.client.search_runs(
                        [self.experiment_id],
                        filter_string=f"tags.`{MLFLOW_PARENT_RUN_ID}` = '{parent}'",
                        max_results=1000,
                        page_token=token,
                    )
                    for run in page:
                        if KEY_TAG in run.data.tags:
                            found.setdefault(run.data.tags[KEY_TAG], run.info.run_id)
                    token = page.token
                    if not token:
                        break
            self._children[parent] = found
        return self._children[parent]

    def _stack(self) -> list[str]:
        if not hasattr(self._local, "stack"):
            self._local.stack = []
        return self._local.stack

    def _run(self, run_id: str | None) -> str:
        run_id = run_id or self.active_run_id()
        if run_id is None:
            raise RuntimeError("no active run: log inside `with tracker.job_run(...)`")
        return run_id

    # Params, metrics, tags --------------------------------------------------------------------------

    def log_params(self, params: Mapping[str, JSON], *, run_id: str | None = None) -> None:
        run_id = self._run(run_id)
        flat = flatten(params)
        with self._lock:
            logged = self._params.get(run_id)
            if logged is None:
                logged = {} if run_id in self._fresh else dict(self.client.get_run(run_id).data.params)
                self._params[run_id] = logged
            new = {k: v for k, v in flat.items() if k not in logged}
            # Params are immutable in MLflow; a resumed job with changed settings keeps the first values.
            changed = {k: [logged[k], v] for k, v in flat.items() if k in logged and logged[k] != v}
            logged.update(new)
        items = [Param(k, v) for k, v in new.items()]
        for i in range(0, len(items), BATCH):
            self.client.log_batch(run_id, params=items[i : i + BATCH])
        if changed:
            log.warning("run %s resumed with changed params %s; the first values are kept", run_id, sorted(changed))
            self.set_tags({"acon.changed_params": json.dumps(changed)[:MAX_TAG_CHARS]}, run_id=run_id)

    def log_metrics(
        self, metrics: Mapping[str, float | int | bool | None], step: int | None = None, *, run_id: str | None = None
    ) -> None:
        run_id = self._run(run_id)
        step = int(step or 0)
        now = int(time.time() * 1000)
        batch = []
        with self._lock:
            for key, value in metrics.items():
                if value is None:
                    continue
                steps = self._steps(run_id, key)
                if step in steps:
                    continue
                steps.add(step)
                batch.append(Metric(key, float(value), now, step))
        for i in range(0, len(batch), 1000):
            self.client.log_batch(run_id, metrics=batch[i : i + 1000])

    def _steps(self, run_id: str, key: str) -> set[int]:
        """Steps already logged for `key` (read from the store once per key for a resumed run)."""
        points = self._points.get(run_id)
        if points is None:
            points = {}
            if run_id not in self._fresh:
                existing = self.client.get_run(run_id).data.metrics
                points = {k: {m.step for m in self.client.get_metric_history(run_id, k)} for k in existing}
            self._points[run_id] = points
        return points.setdefault(key, set())

    def set_tags(self, tags: Mapping[str, TagValue], *, run_id: str | None = None) -> None:
        run_id = self._run(run_id)
        items = [RunTag(k, str(v)[:MAX_TAG_CHARS]) for k, v in tags.items() if v is not None]
        for i in range(0, len(items), BATCH):
            self.client.log_batch(run_id, tags=items[i : i + BATCH])

    # Artifacts --------------------------------------------------------------------------------------

    def log_text(self, text: str, artifact_file: str) -> None:
        self.client.log_text(self._run(None), text, artifact_file)

    def log_artifact(self, path: Path, artifact_path: str | None = None) -> None:
        self.client.log_artifact(self._run(None), str(path), artifact_path)

    def log_guideline(self, guideline: Guideline, round: int | None = None) -> str | None:
        path = f"guidelines/{_round_prefix(round)}{_safe_name(guideline.name)}-{guideline.version}.md"
        self.log_text(guideline.to_markdown(), path)
        return path

    def log_guideline_diff(self, old: Guideline, new: Guideline, name: str | None = None) -> str | None:
        path = f"diffs/{_safe_name(name or f'{old.version}-to-{new.version}')}.html"
        self.log_text(guideline_diff(old, new), path)
        return path

    def log_pair_diff(self, task_id: str, html: str, markdown: str, round: int | None = None) -> str | None:
        folder = "pairs" if round is None else f"pairs/r{round:02d}"
        self.log_text(html, f"{folder}/{_safe_name(task_id)}.html")
        self.log_text(markdown, f"{folder}/{_safe_name(task_id)}.md")
        return f"{folder}/{_safe_name(task_id)}.html"

    def mark_pair(
        self, diff: PairDiff, full: Episode, compressed: Episode, diff_path: str | None, split: str | None = None
    ) -> None:
        if not self.traces:
            return
        full_id, compressed_id = (self.trace_id(e) or self._trace_for_pair(e, split) for e in (full, compressed))
        self.flush()  # tags and assessments are written to the store, where the traces must already be
        key = (full_id, compressed_id)
        with self._lock:
            if key in self._marked:
                return
            self._marked.add(key)
        if compressed_id is not None and self._already_marked(compressed_id, diff):
            return  # a resumed job mines the same pair again
        ref = (self._run(None), diff_path) if diff_path else None
        mark_pair(
            self.tracing,
            diff,
            full_trace=full_id,
            compressed_trace=compressed_id,
            diff_ref=ref,
            near_miss=compressed.outcome == "success",
        )

    def _trace_for_pair(self, episode: Episode, split: str | None) -> str | None:
        tags = {"acon.tier": tier_of(episode.agent), **({"acon.split": split} if split else {})}
        return self.trace_episode(episode, tags)

    def trace_id(self, episode: Episode) -> str | None:
        """The trace of an episode: traced by this process, or found in the store by its key."""
        key = episode_key(episode)
        with self._lock:
            known = self._trace_ids.get(key)
        if known is not None:
            return known
        quoted = key.replace("'", "\\'")
        found = self.client.search_traces(
            locations=[self.experiment_id],
            include_spans=False,
            max_results=1,
            filter_string=f"tags.`{EPISODE_TAG}` = '{quoted}'",
        )
        if not found:
            return None
        with self._lock:
            self._trace_ids[key] = found[0].info.trace_id
        return found[0].info.trace_id

    def _already_marked(self, trace_id: str, diff: PairDiff) -> bool:
        info = self.tracing.get_trace_info(trace_id)
        return info.tags.get(PAIR_TAG) == pair_tags(diff, diff_ref=None)[PAIR_TAG]

    def log_table(self, rows: Sequence[JSONRecord], artifact_file: str) -> None:
        """The run's table is `rows`. MLflow's `log_table` appends to a table the run already has, so a resumed job
        that records an evaluation again would list every episode twice; a table already there is rewritten in
        the same format instead (its `mlflow.loggedArtifacts` tag was set by the first write)."""
        if not artifact_file.endswith(".json"):
            raise ValueError(f"table artifact {artifact_file!r} must end with .json (MLflow's table format)")
        run_id = self._run(None)
        folder = posixpath.dirname(artifact_file) or None
        if artifact_file not in {f.path for f in self.client.list_artifacts(run_id, folder)}:
            self.client.log_table(run_id, to_columns(rows), artifact_file)
            return
        columns = to_columns(rows)
        # MLflow's table format: pandas' "split" orientation without the index.
        table = {"columns": list(columns), "data": [list(row) for row in zip(*columns.values(), strict=True)]}
        self.client.log_text(run_id, json.dumps(table), artifact_file)

    def log_pareto(
        self,
        points: Sequence[ParetoPoint],
        front: Sequence[str] | None = None,
        round: int | None = None,
        *,
        name: str | None = None,
        title: str | None = None,
    ) -> str | None:
        front = list(front_labels(points) if front is None else front)
        title = title or "success vs peak tokens" + ("" if round is None else f", round {round}")
        stem = _safe_name(name) if name else "final" if round is None else f"r{round:02d}"
        with tempfile.TemporaryDirectory() as tmp:
            image = Path(tmp) / f"{stem}.png"
            image.write_bytes(plot_png(points, front, title=title))
            self.log_artifact(image, "pareto")
        self.client.log_dict(
            self._run(None), {"points": [vars(p) for p in points], "front": front}, f"pareto/{stem}.json"
        )
        return f"pareto/{stem}.png"

    def log_report(self, markdown: str, data: JSONRecord | None = None) -> None:
        self.log_text(markdown, "report.md")
        if data is not None:
            self.log_text(json.dumps(data, indent=2, ensure_ascii=False, default=str), "report.json")

    # Traces -----------------------------------------------------------------------------------------

    def trace_episode(
        self, episode: Episode, tags: Mapping[str, str] | None = None, *, started_at: float | None = None
    ) -> str | None:
        if not self.traces:
            return None
        run_id = self.active_run_id()
        if run_id is not None:
            key = episode_key(episode)
            with self._lock:
                traced = self._traced_in(run_id)
                if key in traced:
                    return None
                traced.add(key)
        started = time.time() - episode.wall_s if started_at is None else started_at
        trace_id = log_episode_trace(
            episode, started_at=started, experiment_id=self.experiment_id, run_id=run_id, tags=tags
        )
        with self._lock:
            self._trace_ids[episode_key(episode)] = trace_id
        return trace_id

    def _traced_in(self, run_id: str) -> set[str]:
        if run_id not in self._traced:
            keys: set[str] = set()
            if run_id not in self._fresh:
                token = None
                while True:
                    page = self.client.search_traces(
                        locations=[self.experiment_id],
                        run_id=run_id,
                        include_spans=False,
                        max_results=500,
                        page_token=token,
                    )
                    keys.update(t.info.tags[EPISODE_TAG] for t in page if EPISODE_TAG in t.info.tags)
                    token = page.token
                    if not token:
                        break
            self._traced[run_id] = keys
        return self._traced[run_id]

    def flush(self) -> None:
        # Not while the process is stopping: the export queue drains one trace at a time, each waiting on the
        # store's lock, minutes on a loaded machine; a rerun traces the episodes whose traces are missing.
        if self.traces and not interrupts.stopping():
            mlflow.flush_trace_async_logging()
            self._report_lost()

    def _report_lost(self) -> None:
        """One line for the trace writes MLflow dropped since the last flush, and the total on the job run."""
        lost = losses()
        new = lost.count - self._lost_reported
        if new <= 0:
            return
        self._lost_reported = lost.count
        sqlite = self.store.uri.startswith("sqlite:")
        waited = f" after waiting up to {stores.SQLITE_BUSY_TIMEOUT_S:g} s" if sqlite else ""
        log.warning(
            "acon: warning: tracking: %d trace write(s) to %s failed%s (%s); those episodes' traces are missing "
            "or incomplete in the MLflow UI, their records are in %s",
            new,
            self.store.uri,
            waited,
            lost.last,
            self.job_dir,
        )
        if self._job_run_id is not None:
            # The count on the run itself, for whoever reviews it later; if even this write fails, the line
            # above has said it.
            with contextlib.suppress(mlflow.exceptions.MlflowException):
                total = int(self.client.get_run(self._job_run_id).data.tags.get(LOST_TAG, "0")) + new
                self.set_tags({LOST_TAG: total}, run_id=self._job_run_id)

    # Prompt registry --------------------------------------------------------------------------------

    def register_guideline(
        self,
        guideline: Guideline,
        *,
        alias: str | None = None,
        tags: Mapping[str, str] | None = None,
        message: str | None = None,
    ) -> RegisteredGuideline:
        with self._lock:
            registered = self.registry.register(guideline, alias=alias, tags=dict(tags or {}), message=message)
            run_id = self.active_run_id()
            if run_id is not None:
                for uri in (registered.history, registered.observation):
                    self.client.link_prompt_version_to_run(run_id, uri)
        return registered

    def tag_guideline(self, guideline: Guideline, tags: Mapping[str, str]) -> None:
        with self._lock:
            # A job resumed on another store (moved, or started afresh) never registered what it screened
            # before: the status lands on a version registered now, not on a KeyError after the report.
            if self.registry.find(guideline.version) is None:
                self.registry.register(guideline)
            self.registry.tag_version(guideline, {k: str(v) for k, v in tags.items()})

    def set_best(self, guideline: Guideline, *, prompt_tags: Mapping[str, str] | None = None) -> RegisteredGuideline:
        registered = self.register_guideline(guideline, alias=BEST)
        if prompt_tags:
            tags = {k: str(v) for k, v in prompt_tags.items()}
            with self._lock:
                self.registry.tag_prompts(tags)
                self.registry.tag_version(guideline, tags)
        if self._job_run_id is not None:
            self.set_tags(
                {"acon.best_guideline": guideline.version, "acon.best_prompt": registered.history},
                run_id=self._job_run_id,
            )
        return registered


def _point_mlflow_at(uri: str) -> None:
    """Spans are exported through MLflow's global tracking URI, so it has to point at this store; but
    `mlflow.set_tracking_uri` also writes `MLFLOW_TRACKING_URI` into the environment, which acon reads as the
    user's choice of store: the next job in this process, and every process it starts, would then log into
    this job's store without a word. The environment is left as the user set it."""
    names = ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI")
    before = {name: os.environ.get(name) for name in names}
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
