"""Where a job's MLflow data lives: a sqlite file in the job directory unless a URI is configured.

Precedence: `tracking.uri` in the config, then `MLFLOW_TRACKING_URI`, then `sqlite:///<job_dir>/mlflow.db`
with artifacts in `<job_dir>/mlartifacts`. A remote server (http, databricks) keeps its own artifact
root; any other store gets the job's artifact directory, fixed explicitly when the experiment is created
(MLflow would otherwise resolve it against whatever the working directory happens to be).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from optimizer import interrupts
from optimizer.config import TrackingConfig
from optimizer.errors import AconError, ConfigError

DB_NAME = "mlflow.db"
ARTIFACTS_DIR = "mlartifacts"
# How long a write to a sqlite store waits for another connection's write before failing "database is locked".
# MLflow sets 20 s on every session (`PRAGMA busy_timeout = 20000` in mlflow/store/db/utils.py); on a loaded
# machine, with the process at low CPU priority, writers queued behind each other past that and episode traces
# were dropped. sqlite's busy handler polls rather than queues, so the wait is a ceiling, not a cost.
SQLITE_BUSY_TIMEOUT_S = 120.0
# The wait once the process is stopping (SIGTERM, Ctrl-C): the job run's closing writes are worth a try, not
# minutes of an exit (with the store locked by another connection, `acon run` took 127 s to stop).
STOPPING_BUSY_TIMEOUT_S = 2.0
_patient = threading.Lock()
_patient_installed = False


@dataclass(frozen=True)
class Store:
    """A resolved tracking store: the URI, and the artifact root for new experiments (None: the server's)."""

    uri: str
    artifact_root: Path | None

    @property
    def artifact_location(self) -> str | None:
        return self.artifact_root.as_uri() if self.artifact_root is not None else None

    @property
    def is_remote(self) -> bool:
        return urlsplit(self.uri).scheme in ("http", "https", "databricks")


def check_reachable(store: Store, timeout_s: float = 5.0) -> None:
    """Refuse, in one line, a tracking server that does not answer `/health`, before a job starts.

    MLflow's client retries an unreachable server with backoff for minutes and then fails mid-job with a
    multi-line error; asked once up front, the answer comes in seconds and nothing has run yet.
    """
    problem = health_problem(store, timeout_s)
    if problem is None:
        return
    raise AconError(
        f"tracking server {store.uri} is not reachable ({problem}); start it, or set [tracking] uri "
        "to another server (or leave it empty for the job's sqlite store)"
    )


def health_problem(store: Store, timeout_s: float = 5.0) -> str | None:
    """Why a tracking server does not answer `/health` (None: it does, or the store is no server)."""
    parts = urlsplit(store.uri)
    if parts.scheme not in ("http", "https"):
        return None
    import urllib.error
    import urllib.request

    url = f"{store.uri.rstrip('/')}/health"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # 127.0.0.1 never via a proxy
    try:
        with opener.open(url, timeout=timeout_s) as response:
            if response.status == 200:
                return None
            return f"HTTP {response.status}"
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return str(reason).strip() or type(reason).__name__


def patient_sqlite(store: Store) -> None:
    """Make writes to a sqlite store wait their turn instead of failing: one trace-export thread, a long busy wait.

    sqlite admits one writer at a time. MLflow exports traces from a pool of 10 threads by default, each
    write a transaction of its own, beside the job's own metric and param writes; sqlite's busy handler
    sleeps and polls instead of queueing, and a starved process holds the lock while its threads wait for
    CPU, so the waits multiply with the writers: at nice 19, 10 threads lost a write even after 120 s
    (load ~12), one thread none of 384 traces (load ~11; not a controlled comparison). The price: one
    thread drained a backlog of 120 traces in 21-24 s against 8-14 s for 10, and a job waits for that
    backlog when it ends or is stopped. Set before the tracker points MLflow at the store (the export
    pool is built when the tracking URI changes); a value already in the environment wins.
    """
    if not store.uri.startswith("sqlite:"):
        return
    os.environ.setdefault("MLFLOW_ASYNC_TRACE_LOGGING_MAX_WORKERS", "1")
    _wait_longer_on_sqlite_locks()


def _wait_longer_on_sqlite_locks() -> None:
    """Replace MLflow's per-session sqlite busy timeout with `SQLITE_BUSY_TIMEOUT_S` (once per process).

    MLflow offers no setting for it and runs the PRAGMA at the start of every session, after any
    connect-time setting, so the statement itself is rewritten on its way to the driver.
    """
    global _patient_installed
    with _patient:
        if _patient_installed:
            return
        from sqlalchemy import event
        from sqlalchemy.engine import Engine

        event.listen(Engine, "before_cursor_execute", _busy_timeout, retval=True)
        _patient_installed = True


def _busy_timeout(
    conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool
) -> tuple[str, Any]:
    if statement.startswith("PRAGMA busy_timeout") and conn.dialect.name == "sqlite":
        wait = STOPPING_BUSY_TIMEOUT_S if interrupts.stopping() else SQLITE_BUSY_TIMEOUT_S
        statement = f"PRAGMA busy_timeout = {int(wait * 1000)};"
    return statement, parameters


def sqlite_uri(path: Path) -> str:
    return f"sqlite:///{path.resolve()}"


def job_store(job_dir: Path) -> Store:
    """The default store of a job directory."""
    job_dir = job_dir.resolve()
    return Store(sqlite_uri(job_dir / DB_NAME), job_dir / ARTIFACTS_DIR)


# What MLflow itself stores to; a plugin's schemes are added from its entry points (`known_schemes`).
MLFLOW_SCHEMES = (
    "file",
    "databricks",
    "databricks-uc",
    "uc",
    "http",
    "https",
    "postgresql",
    "mysql",
    "sqlite",
    "mssql",
)


def resolve_store(config: TrackingConfig, job_dir: Path) -> Store:
    uri = config.uri or os.environ.get("MLFLOW_TRACKING_URI", "")
    if not uri:
        return job_store(job_dir)
    check_uri(uri, "[tracking] uri" if config.uri else "MLFLOW_TRACKING_URI")
    store = Store(uri, None)
    if store.is_remote:
        return store
    if uri.startswith("sqlite:///"):
        # Artifacts beside the database file, so a store moved or copied keeps them.
        database = Path(uri.removeprefix("sqlite:///"))
        return Store(uri, database.resolve().parent / ARTIFACTS_DIR)
    return Store(uri, job_dir.resolve() / ARTIFACTS_DIR)


def resolve_uri(job_dir: Path) -> str:
    """The tracking URI a job directory logged to (its `mlflow_run.json`), else its default sqlite store."""
    from optimizer.tracking.parent_runs import ParentRuns

    state = ParentRuns.read(job_dir)
    return state.tracking_uri if state is not None else job_store(job_dir).uri


def check_uri(uri: str, where: str) -> None:
    """Refuse in one line a URI MLflow cannot store to: it would fail on the job's first write, in a traceback."""
    if uri in ("databricks", "databricks-uc", "uc"):  # a workspace by its default profile: no scheme
        return
    scheme = urlsplit(uri).scheme.split("+")[0].lower()  # postgresql+psycopg2://...
    if scheme and scheme not in known_schemes():
        raise ConfigError(
            f"{where} {uri!r}: MLflow has no store for '{scheme}://' (it knows {', '.join(sorted(known_schemes()))}); "
            "leave it empty for the job's own sqlite store"
        )
    if scheme in ("", "file") and os.environ.get("MLFLOW_ALLOW_FILE_STORE", "").lower() not in ("1", "true"):
        # MLflow 3 refuses a file store unless told otherwise; said here, before anything runs.
        raise ConfigError(
            f"{where} {uri!r} is a file store, which MLflow no longer writes unless MLFLOW_ALLOW_FILE_STORE=true; "
            "use sqlite:///<directory>/mlflow.db instead"
        )


def known_schemes() -> set[str]:
    from importlib.metadata import entry_points

    return {*MLFLOW_SCHEMES, *(e.name for e in entry_points(group="mlflow.tracking_store"))}
