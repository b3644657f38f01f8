"""A tracking server that stops answering mid-job: the job goes on, tracking falls behind, a resume catches up.

MLflow's client retries an unreachable server for minutes per call (7 retries, backoff factor 2, 120 s
timeout, and 500 s for an asynchronous trace export), and a failed call raises out of whatever hook made it,
killing a job whose episodes are all on disk. Instead:

- every request to a remote store gets a few quick retries (`fail_fast`);
- a hook that fails while `/health` does not answer either marks tracking *behind*: one warning line, and
  from then on no hook of this process sends a request. A hook that fails while the server answers is a
  bug and raises as before;
- each hook not logged is written to `<job_dir>/tracking_pending.json` (what to replay: the run directory,
  the candidate version, the round), and the command ends non-zero (`TrackingBehind`) after its results;
- the next run of the job on the same store replays the journal (`catch_up`) and drops each entry once
  it is logged. The hooks are idempotent on the store (children found by key, a metric step logged once,
  an episode traced once per run, a prompt registered once per hash), so an entry whose hook half-ran
  before the server went away adds nothing twice.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from optimizer.errors import AconError
from optimizer.storage import atomic_write_json
from optimizer.tracking.store import Store, health_problem

if TYPE_CHECKING:
    from optimizer.evaluate.strategy_runs import RunResult
    from optimizer.search.job import OptimizationJob
    from optimizer.search.report_model import Report
    from optimizer.tracking.hooks import JobTracking, OptimizeTracking

PENDING_FILE = "tracking_pending.json"
# A couple of retries a second or two apart, a 10 s answer: a blip is ridden out, an outage costs seconds.
FAST_HTTP = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER": "0.5",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
    "MLFLOW_ASYNC_TRACE_LOGGING_RETRY_TIMEOUT": "15",
}
HEALTH_TIMEOUT_S = 3.0
# Replayed by the resumed job itself: it reports and closes its run again at its end.
REDONE_BY_JOB = ("report", "finish")


class TrackingBehind(AconError):
    """The job finished, its results are on disk, but some of it is not on the tracking server yet."""

    exit_code = 3


def fail_fast(store: Store) -> None:
    """Bounded retries and timeouts for a remote store's requests (a setting already in the environment wins)."""
    if store.is_remote:
        for key, value in FAST_HTTP.items():
            os.environ.setdefault(key, value)


class Pending:
    """`<job_dir>/tracking_pending.json`: the hooks not logged to `uri`, by key, in the order they were missed."""

    def __init__(self, job_dir: Path, uri: str) -> None:
        self.path = job_dir / PENDING_FILE
        self.uri = uri
        self.entries: dict[str, dict[str, Any]] = {}
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return
        except ValueError as exc:
            raise AconError(f"{self.path} is corrupt ({exc}); delete it to drop the missed tracking") from None
        if data.get("tracking_uri") == uri:
            self.entries = {e["key"]: e for e in data.get("entries", [])}

    def add(self, entry: Mapping[str, Any]) -> None:
        if entry["key"] not in self.entries:
            self.entries[entry["key"]] = dict(entry)
            self._write()

    def done(self, key: str) -> None:
        if self.entries.pop(key, None) is not None:
            self._write()

    def _write(self) -> None:
        if not self.entries:
            self.path.unlink(missing_ok=True)
            return
        atomic_write_json(self.path, {"tracking_uri": self.uri, "entries": list(self.entries.values())})


def run_entry(result: RunResult, *, agent: str, split: str, hook: str) -> dict[str, Any]:
    """What replaying an evaluation's hook needs: its directory, strategy, task order, agent and split."""
    return {
        "key": f"{hook}:{result.directory.name}",
        "hook": hook,
        "directory": str(result.directory),
        "strategy": result.strategy.model_dump(mode="json"),
        "tasks": list(result.episodes.task_ids),
        "agent": agent,
        "split": split,
    }


def load_result(entry: Mapping[str, Any], cost_model: str | None) -> RunResult:
    """The evaluation of a journal entry, read back from its run directory (summarized as the job does)."""
    from optimizer.context.strategies import parse_strategy
    from optimizer.evaluate.records import EpisodeRecords
    from optimizer.evaluate.store import EpisodeStore
    from optimizer.evaluate.strategy_runs import RunResult, summarize

    directory = Path(entry["directory"])
    store = EpisodeStore(directory)
    offsets, summaries = store.index()
    order = [t for t in entry["tasks"] if t in offsets]
    records = EpisodeRecords(store.log, order, offsets, summaries)
    return RunResult(parse_strategy(entry["strategy"]), directory, records, summarize(records, cost_model))


class Guarded:
    """The hooks of a `JobTracking`/`OptimizeTracking`, journaled instead of raised when the server is gone."""

    def __init__(self, inner: JobTracking, store: Store, job_dir: Path, log: Callable[[str], None]) -> None:
        self.inner = inner
        self.store = store
        self.log = log
        self.pending = Pending(job_dir, store.uri)
        self.behind = False

    @property
    def optimize(self) -> OptimizeTracking:
        """The hooks of `acon optimize`, which only its jobs call."""
        return cast("OptimizeTracking", self.inner)

    @property
    def missed(self) -> int:
        return len(self.pending.entries)

    def __getattr__(self, name: str) -> Any:  # run_ref, tracker, config: what the job reads, unguarded
        return getattr(self.inner, name)

    def record_run(self, result: RunResult, *, agent: str, split: str) -> None:
        entry = run_entry(result, agent=agent, split=split, hook="record_run")
        self.call(entry, lambda: self.inner.record_run(result, agent=agent, split=split))

    def on_run(self, job: OptimizationJob, result: RunResult, *, agent: str, split: str) -> None:
        entry = run_entry(result, agent=agent, split=split, hook="run")
        self.call(entry, lambda: self.optimize.on_run(job, result, agent=agent, split=split))

    def on_candidate(self, job: OptimizationJob, candidate: Any, result: RunResult) -> None:
        entry = {"key": f"candidate:{candidate.version}", "hook": "candidate", "version": candidate.version}
        self.call(entry, lambda: self.optimize.on_candidate(job, candidate, result))

    def on_diffs(self, job: OptimizationJob, index: int, pairs: Any) -> None:
        entry = {"key": f"diffs:{index}", "hook": "diffs", "round": index}
        self.call(entry, lambda: self.optimize.on_diffs(job, index, pairs))

    def on_report(self, job: OptimizationJob, report: Report) -> None:
        self.call({"key": "report", "hook": "report"}, lambda: self.optimize.on_report(job, report))

    def call(self, entry: Mapping[str, Any], hook: Callable[[], object]) -> None:
        """Run a hook; once behind, journal it without a request. Logged: its journal entry, if any, goes."""
        if self.behind:
            self.pending.add(entry)
            return
        try:
            hook()
        except Exception as exc:
            self.failed(exc, entry)
            return
        self.pending.done(entry["key"])

    def failed(self, exc: BaseException, entry: Mapping[str, Any]) -> None:
        """Journal `entry` and fall behind if the server is gone; re-raise `exc` if it still answers."""
        problem = health_problem(self.store, HEALTH_TIMEOUT_S) if self.store.is_remote else None
        if problem is None:
            raise exc
        self.pending.add(entry)
        if not self.behind:
            self.behind = True
            self.log(
                f"warning: tracking server {self.store.uri} stopped answering ({problem}); the job goes on "
                f"and keeps its results in {self.pending.path.parent}; tracking is behind until it is resumed "
                "(--resume) with the server up"
            )

    def catch_up(self, job: OptimizationJob) -> int:
        """Replay what an earlier run of this `acon optimize` job could not log; returns how many hooks."""
        replayed = 0
        for entry in list(self.pending.entries.values()):
            if self.behind:
                break
            if entry["hook"] in REDONE_BY_JOB or entry["hook"] == "record_run":
                continue  # the resumed job reports and closes its run again; `acon run` records on a rerun
            replay = self._replay(job, entry)
            if replay is None:  # its run directory or candidate is gone: nothing left to log
                self.pending.done(entry["key"])
                continue
            self.call(entry, replay)
            replayed += 0 if self.behind else 1
        return replayed

    def _replay(self, job: OptimizationJob, entry: Mapping[str, Any]) -> Callable[[], object] | None:
        hook = entry["hook"]
        if hook == "run":
            if not Path(entry["directory"]).is_dir():
                return None
            result = load_result(entry, job.config.cost.primary)
            return lambda: self.optimize.on_run(job, result, agent=entry["agent"], split=entry["split"])
        if hook == "candidate":
            candidate = job.state.candidates.get(entry["version"])
            if candidate is None or "train" not in candidate.screens:
                return None
            # The hook reads the candidate's saved screens, not the evaluation it was handed.
            return lambda: self.optimize.on_candidate(job, candidate, None)  # type: ignore[arg-type]
        if hook == "diffs":
            return lambda: replay_diffs(self.optimize, job, int(entry["round"]))
        return None


def replay_diffs(tracking: Any, job: OptimizationJob, index: int) -> None:
    """A round's pair diffs as the search saved them (`rounds/NN/diffs.json`), into its round run.

    The pairs' episodes are not kept with them, so their traces are not tagged with the pair again.
    """
    from optimizer.mining.pair_diff import PairDiff

    saved = job.dir.path / f"rounds/{index:02d}/diffs.json"
    diffs = [PairDiff.from_dict(d) for d in json.loads(saved.read_text())] if saved.exists() else []
    tracking.log_diffs(index, diffs)


@contextlib.contextmanager
def job_run(guard: Guarded, opened: contextlib.AbstractContextManager[Any]) -> Iterator[Any]:
    """Enter the job run; on exit, a server gone away fails the run's closing writes, not the job."""
    run_id = opened.__enter__()
    try:
        yield run_id
    except BaseException as exc:
        try:
            suppressed = opened.__exit__(type(exc), exc, exc.__traceback__)
        except Exception as closing:
            if closing is exc:
                raise
            guard.failed(closing, {"key": "finish", "hook": "finish"})
            suppressed = False
        if not suppressed:
            raise
    else:
        try:
            opened.__exit__(None, None, None)
        except Exception as closing:
            guard.failed(closing, {"key": "finish", "hook": "finish"})
            return
        guard.pending.done("finish")


def check_caught_up(guard: Guarded | None, hint: str) -> None:
    """End the command non-zero, in one line, if some of its tracking was not logged."""
    if guard is None or not guard.missed:
        return
    raise TrackingBehind(
        f"tracking incomplete: {guard.missed} update(s) not logged to {guard.store.uri} (listed in "
        f"{guard.pending.path}); the results are saved; {hint} once the server answers"
    )
