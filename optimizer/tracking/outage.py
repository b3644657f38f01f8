"""A tracking server that stops answering mid-job: the job goes on, tracking falls behind, a resume catches up.

MLflow's client retries an unreachable server for minutes per call (7 retries, backoff factor 2, 120 s
timeout, and 500 s for an asynchronous trace export), and a failed call raises out of whatever logged it,
killing a job whose episodes are all on disk. Instead:

- every request to a remote store gets a few quick retries (`fail_fast`);
- an event whose logging fails while `/health` does not answer either marks tracking *behind*: one
  warning line, and from then on no event of this process sends a request. A failure while the server
  answers is a bug and raises as before;
- each event not logged is written to `<job_dir>/tracking_pending.json`, serialized (`JobEvent.to_dict`),
  and the command ends non-zero (`TrackingBehind`) after its results;
- the next run of the job on the same store replays the journal (`catch_up`) through the same subscriber
  and drops each entry once it is logged. The subscriber is idempotent on the store (children found by
  key, a metric step logged once, an episode traced once per run, a prompt registered once per hash), so
  an event half-logged before the server went away adds nothing twice.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from optimizer import interrupts
from optimizer.errors import AconError
from optimizer.jsontypes import JSONObject, JSONRecord, record, text
from optimizer.search.events import (
    CandidateChosen,
    JobEvent,
    ReportBuilt,
    RoundClosed,
    SeedScreened,
    Subscriber,
    read_event,
)
from optimizer.storage import atomic_write_json
from optimizer.tracking.store import Store, health_problem

PENDING_FILE = "tracking_pending.json"
# The journal's layout; a journal of another layout (an older acon's) is not replayed.
PENDING_FORMAT = 2
# A couple of retries a second or two apart, a 10 s answer: a blip is ridden out, an outage costs seconds.
FAST_HTTP = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER": "0.5",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
    "MLFLOW_ASYNC_TRACE_LOGGING_RETRY_TIMEOUT": "15",
}
HEALTH_TIMEOUT_S = 3.0
# Published again by the resumed job itself, from its state: its progress, choice and report.
REDONE_BY_JOB = (SeedScreened.kind, RoundClosed.kind, CandidateChosen.kind, ReportBuilt.kind)


class TrackingBehind(AconError):
    """The job finished, its results are on disk, but some of it is not on the tracking server yet."""

    exit_code = 3


def fail_fast(store: Store) -> None:
    """Bounded retries and timeouts for a remote store's requests (a setting already in the environment wins)."""
    if store.is_remote:
        for key, value in FAST_HTTP.items():
            os.environ.setdefault(key, value)


class Pending:
    """`<job_dir>/tracking_pending.json`: what was not logged to `uri`, by key, in the order it was missed.

    An entry is `{"key", "scope", "event"}`: the job that missed it (`optimize`, `run`, `compare`) and the
    event as `to_dict` wrote it (None for the job run's own closing writes)."""

    def __init__(self, job_dir: Path, uri: str) -> None:
        self.path = job_dir / PENDING_FILE
        self.uri = uri
        self.entries: dict[str, JSONObject] = {}
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return
        except ValueError as exc:
            raise AconError(f"{self.path} is corrupt ({exc}); delete it to drop the missed tracking") from None
        if data.get("tracking_uri") == uri and data.get("format") == PENDING_FORMAT:
            self.entries = {e["key"]: e for e in data.get("entries", [])}

    def add(self, entry: JSONRecord) -> None:
        key = text(entry["key"])
        if key not in self.entries:
            self.entries[key] = dict(entry)
            self._write()

    def done(self, key: str) -> None:
        if self.entries.pop(key, None) is not None:
            self._write()

    def _write(self) -> None:
        if not self.entries:
            self.path.unlink(missing_ok=True)
            return
        data = {"format": PENDING_FORMAT, "tracking_uri": self.uri, "entries": list(self.entries.values())}
        atomic_write_json(self.path, data)


class Guarded:
    """A subscriber (`JobTracking`, `OptimizeTracking`) whose events are journaled instead of raised once the
    server is gone, and replayed into it by a later run of the same job (`catch_up`)."""

    def __init__(
        self, inner: Subscriber, store: Store, job_dir: Path, log: Callable[[str], None], *, scope: str
    ) -> None:
        self.inner = inner
        self.store = store
        self.log = log
        self.scope = scope
        self.pending = Pending(job_dir, store.uri)
        self.behind = False

    @property
    def missed(self) -> int:
        return len(self.pending.entries)

    @property
    def where(self) -> Mapping[str, str]:
        return self.inner.where

    def __call__(self, event: JobEvent) -> None:
        """Hand `event` on; once behind, journal it without a request. Logged: its journal entry, if any, goes."""
        key = self._key(event.key)
        if self.behind:
            self.pending.add(self._entry(key, event))
            return
        try:
            self.inner(event)
        except Exception as exc:
            self.failed(exc, self._entry(key, event))
            return
        self.pending.done(key)

    def failed(self, exc: BaseException, entry: JSONRecord) -> None:
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

    def finish_failed(self, exc: BaseException) -> None:
        """The job run's closing writes failed: journaled (the next run of the job closes its run again)."""
        self.failed(exc, {"key": self._key("finish"), "scope": self.scope, "event": None})

    def finished(self) -> None:
        self.pending.done(self._key("finish"))

    def catch_up(self, cost_model: str | None) -> int:
        """Replay into the subscriber what an earlier run of this job could not log; returns how many events.

        Only this job's own events, and not those the resumed job published again itself."""
        replayed = 0
        for entry in list(self.pending.entries.values()):
            if self.behind:
                break
            data = entry["event"]
            if entry["scope"] != self.scope or data is None:
                continue
            data = record(data)
            if data["type"] in REDONE_BY_JOB:
                continue
            event = read_event(data, cost_model=cost_model)
            if event is None:  # its run directory is gone: nothing left to log
                self.pending.done(text(entry["key"]))
                continue
            self(event)
            replayed += 0 if self.behind else 1
        return replayed

    def _key(self, key: str) -> str:
        return f"{self.scope}/{key}"

    def _entry(self, key: str, event: JobEvent) -> JSONObject:
        return {"key": key, "scope": self.scope, "event": event.to_dict()}


@contextlib.contextmanager
def job_run(guard: Guarded, opened: contextlib.AbstractContextManager[str | None]) -> Iterator[str | None]:
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
            if interrupts.stopping():
                # The interrupt stands, not a traceback of the write it cut short; the next run reopens the run.
                guard.log(f"warning: tracking: the job run was not closed ({_short(closing)}); a rerun closes it")
            else:
                guard.finish_failed(closing)
            suppressed = False
        if not suppressed:
            raise
    else:
        try:
            opened.__exit__(None, None, None)
        except Exception as closing:
            guard.finish_failed(closing)
            return
        guard.finished()


def check_caught_up(guard: Guarded | None, hint: str) -> None:
    """End the command non-zero, in one line, if some of its tracking was not logged."""
    if guard is None or not guard.missed:
        return
    raise TrackingBehind(
        f"tracking incomplete: {guard.missed} update(s) not logged to {guard.store.uri} (listed in "
        f"{guard.pending.path}); the results are saved; {hint} once the server answers"
    )


def _short(exc: BaseException) -> str:
    # The first line: sqlalchemy appends the statement and its parameters on the next ones.
    return " ".join(str(exc).strip().split("\n")[0].split())[:160]
