"""`acon ui [JOB_DIR]`: the MLflow UI for one job's store, on 127.0.0.1, until Ctrl-C."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import typer

from optimizer.cli.library_logs import library_logs_shown
from optimizer.errors import AconError, ConfigError

HOST = "127.0.0.1"
DEFAULT_PORT = 5000
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 15.0
SERVER_LOG = "mlflow_ui.log"


@dataclass(frozen=True)
class UiTarget:
    """What to serve: a local store URI, its artifact directory, and the experiment and run to open first."""

    uri: str
    artifacts: Path
    experiment_id: str | None = None
    run_id: str | None = None  # the job's parent run: its description is the report and its failures

    @property
    def server_log(self) -> Path:
        """Where the server's own output goes unless `acon -v`: beside the store it serves."""
        return self.artifacts.parent / SERVER_LOG

    def page(self, url: str) -> str:
        if self.experiment_id is None:
            return url
        if self.run_id is None:
            return f"{url}/#/experiments/{self.experiment_id}"
        return f"{url}/#/experiments/{self.experiment_id}/runs/{self.run_id}"


def find_target(path: Path) -> UiTarget:
    """The store of a job directory (or of an experiment config's output directory)."""
    from optimizer.tracking.parent_runs import ParentRuns
    from optimizer.tracking.store import ARTIFACTS_DIR, DB_NAME, job_store

    if path.is_file() and path.suffix == ".toml":
        from optimizer.config import load_experiment

        path = load_experiment(path).out_dir
    state = ParentRuns.read(path)
    if state is not None:
        if not state.tracking_uri.startswith("sqlite:///"):
            raise AconError(f"{path} logs to {state.tracking_uri}; open that server's UI instead")
        database = Path(state.tracking_uri.removeprefix("sqlite:///"))
        if database.exists():
            return UiTarget(state.tracking_uri, database.parent / ARTIFACTS_DIR, state.experiment_id, _parent(state))
    if (path / DB_NAME).exists():
        store = job_store(path)
        assert store.artifact_root is not None
        return UiTarget(store.uri, store.artifact_root)
    raise ConfigError(f"no MLflow store in {path} (expected {DB_NAME} or mlflow_run.json): run a job first")


@contextlib.contextmanager
def serving(target: UiTarget) -> Iterator[UiTarget]:
    """`target`, or for a store copied or moved since it was written, a snapshot of it whose artifact paths
    point into the copy (MLflow keeps them absolute); the snapshot is removed when the server has stopped."""
    import sqlite3

    from optimizer.tracking.relocation import moved_roots, relocated_snapshot
    from optimizer.tracking.store import DB_NAME, sqlite_uri

    database = Path(target.uri.removeprefix("sqlite:///"))
    try:
        moved = moved_roots(database, target.artifacts)
    except sqlite3.Error as exc:
        # The server reads the store itself and says what is wrong with it; the artifacts are all that is lost.
        typer.echo(f"acon: warning: could not read where {database}'s artifacts were written ({exc})", err=True)
        moved = {}
    if not moved:
        yield target
        return
    with tempfile.TemporaryDirectory(prefix="acon-ui-") as scratch:
        try:
            snapshot = relocated_snapshot(database, moved, Path(scratch) / DB_NAME)
        except (sqlite3.Error, OSError) as exc:  # a full temporary disk: the copy is served as it is
            typer.echo(
                f"acon: warning: could not snapshot {database} to read its artifacts from the copy ({exc})", err=True
            )
            yield target
            return
        typer.echo(
            f"acon: {database} records its artifacts under {', '.join(moved)}; serving a snapshot of it that reads "
            f"them from {target.artifacts} (edits made in the UI are not kept, a running job's new writes not shown)",
            err=True,
        )
        yield dataclasses.replace(target, uri=sqlite_uri(snapshot))


def _parent(state) -> str | None:
    """The run to open on: the optimization job's parent run, else the job recorded last (a run or compare)."""
    runs = state.runs
    if "optimize" in runs:
        return runs["optimize"]
    return next(reversed(runs.values()), None)


def server_command(target: UiTarget, port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "mlflow",
        "server",
        "--backend-store-uri",
        target.uri,
        "--registry-store-uri",
        target.uri,
        "--artifacts-destination",
        str(target.artifacts),
        "--host",
        HOST,
        "--port",
        str(port),
        "--workers",
        "1",
        # The UI polls: an access log line per request buried the server's own messages (1,625 lines in 17 min).
        "--uvicorn-opts",
        "--no-access-log",
    ]


def server_env() -> dict[str, str]:
    """The caller's environment with every third-party network switch off (telemetry, cost map)."""
    from optimizer import _offline

    env = dict(os.environ)
    for key, value in _offline._DEFAULTS.items():
        env.setdefault(key, value)
    env["MLFLOW_DISABLE_TELEMETRY"] = "true"
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    # The server's job runner (GenAI evaluation jobs) is not needed to review a job and imports litellm.
    env.setdefault("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "false")
    return env


def port_in_use(port: int) -> bool:
    """Whether something already listens on `port` (a bind fails)."""
    with socket.socket() as probe:
        try:
            probe.bind((HOST, port))
        except OSError:
            return True
        return False


def free_port(preferred: int) -> int:
    """`preferred` if nothing listens there, else any free port."""
    with socket.socket() as probe:
        try:
            probe.bind((HOST, preferred))
        except OSError:
            probe.bind((HOST, 0))
        return probe.getsockname()[1]


def last_line(log: Path | None) -> str:
    """The server log's last non-blank line, to say in one line why the server stopped."""
    if log is None:
        return ""
    try:
        lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return f": {lines[-1][:300]} (log: {log})" if lines else f" (log: {log})"


def wait_healthy(
    url: str, process: subprocess.Popen, timeout_s: float = START_TIMEOUT_S, log: Path | None = None
) -> None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via a proxy
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AconError(
                f"the MLflow server exited with code {process.returncode} before it was ready{last_line(log)}"
            )
        with contextlib.suppress(OSError), opener.open(f"{url}/health", timeout=2) as response:
            if response.status == 200:
                return
        time.sleep(0.5)
    raise AconError(f"the MLflow server did not answer {url}/health within {timeout_s:.0f}s{last_line(log)}")


def stop(process: subprocess.Popen) -> None:
    """SIGTERM to the server's process group, then SIGKILL if it lingers.

    SIGTERM, not SIGINT: uvicorn re-raises a SIGINT after its shutdown and the cancelled lifespan task
    prints two `CancelledError` tracebacks; on SIGTERM both the `mlflow server` parent and its uvicorn
    worker stop quietly.
    """
    for sig, wait_s in ((signal.SIGTERM, STOP_TIMEOUT_S), (signal.SIGKILL, 5.0)):
        if process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(wait_s)


def ui(
    job_dir: Path = typer.Argument(Path("."), help="Job output directory (or its experiment config)."),
    port: int | None = typer.Option(None, help=f"Port on {HOST} (default {DEFAULT_PORT}, or a free one)."),
) -> None:
    """Serve the MLflow UI for a job's tracking store on 127.0.0.1 until Ctrl-C."""
    target = find_target(job_dir)
    if port is not None and port_in_use(port):
        # Checked before starting: another server there would answer /health and pass for ours.
        raise AconError(f"port {port} on {HOST} is already in use; pick another --port or leave it out")
    chosen = port if port is not None else free_port(DEFAULT_PORT)
    url = f"http://{HOST}:{chosen}"
    with serving(target) as served:
        # The server's uvicorn and deprecation lines read as acon's own; they go to a log beside the store
        # (stdout carries only the URL), or to stderr when `acon -v` asks for library output.
        log, output = (None, sys.stderr) if library_logs_shown() else _open_log(target.server_log)
        where = "" if log is None else f" (server log: {log})"
        typer.echo(f"acon: starting the MLflow UI for {target.uri}{where} ...", err=True)
        # Own process group: the server and its uvicorn worker are stopped together.
        try:
            process = subprocess.Popen(
                server_command(served, chosen),
                env=server_env(),
                stdout=output,
                stderr=output,
                start_new_session=True,
            )
        finally:
            if output is not sys.stderr:
                output.close()  # the child holds its own descriptor
        # Explicit handlers: a shell's background job inherits SIGINT ignored; SIGTERM also stops cleanly.
        previous = {sig: signal.signal(sig, _raise_interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            wait_healthy(url, process, log=log)
            typer.echo(target.page(url))
            typer.echo("acon: press Ctrl-C to stop", err=True)
            process.wait()
            if process.returncode:
                raise AconError(f"the MLflow server exited with code {process.returncode}{last_line(log)}")
        except KeyboardInterrupt:
            typer.echo("acon: stopping the MLflow UI", err=True)
        finally:
            stop(process)
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def _open_log(path: Path) -> tuple[Path, IO[str]]:
    """The log beside the store, or a temporary file when the job directory is read-only (a shared job)."""
    try:
        return path, path.open("w")
    except OSError:
        # The caller closes it once the server holds its own descriptor.
        spare = tempfile.NamedTemporaryFile("w", prefix="acon-mlflow-ui-", suffix=".log", delete=False)  # noqa: SIM115
        return Path(spare.name), spare


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def register(app: typer.Typer) -> None:
    app.command("ui")(ui)
