"""`acon ui`: which store it serves, how the server is started, and a real start / query / Ctrl-C cycle."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from mlflow import MlflowClient
from mlflow.artifacts import download_artifacts
from mlflow.utils.mlflow_tags import MLFLOW_ARTIFACT_LOCATION

from optimizer.cli import ui_cmd
from optimizer.cli.ui_cmd import HOST, UiTarget, find_target, free_port, server_command, server_env
from optimizer.errors import AconError, ConfigError
from optimizer.tracking.mlflow_tracker import MlflowTracker
from optimizer.tracking.parent_runs import STATE_FILE, ParentRuns
from optimizer.tracking.store import job_store
from tests.tracking.conftest import make_episode

ROOT = Path(__file__).resolve().parents[2]


def test_target_is_the_job_store(job_dir):
    target = find_target(job_dir)
    assert target.uri == job_store(job_dir).uri and target.artifacts == job_dir.resolve() / "mlartifacts"


def test_target_follows_the_state_file_and_refuses_remote_stores(tmp_path, job_dir):
    (tmp_path / STATE_FILE).write_text(
        json.dumps({"tracking_uri": job_store(job_dir).uri, "experiment_id": "7", "experiment": "x", "runs": {}})
    )
    assert find_target(tmp_path) == UiTarget(job_store(job_dir).uri, job_dir.resolve() / "mlartifacts", "7")
    (tmp_path / STATE_FILE).write_text(
        json.dumps({"tracking_uri": "http://mlflow.example", "experiment_id": "1", "runs": {}})
    )
    with pytest.raises(AconError, match=r"http://mlflow\.example"):
        find_target(tmp_path)
    with pytest.raises(ConfigError, match="no MLflow store"):
        find_target(tmp_path / "empty")


def test_a_copied_job_directory_opens_its_own_store_not_the_original(job_dir, tmp_path):
    tracker = MlflowTracker(job_store(job_dir), job_dir, "moved")
    with tracker.job_run("compare") as compare_id:
        pass
    with tracker.job_run("optimize") as optimize_id:
        pass
    written = json.loads((job_dir / STATE_FILE).read_text())
    assert written["store"] == "mlflow.db" and written["runs"] == {"compare": compare_id, "optimize": optimize_id}
    copy = tmp_path / "elsewhere" / "job"
    shutil.copytree(job_dir, copy)
    target = find_target(copy)
    assert target.uri == job_store(copy).uri != job_store(job_dir).uri
    assert target.artifacts == copy.resolve() / "mlartifacts"
    assert target.page("http://h") == f"http://h/#/experiments/{tracker.experiment_id}/runs/{optimize_id}"
    assert ParentRuns.read(copy).run_for(job_store(copy).uri, tracker.experiment_id, "optimize") == optimize_id


def test_a_copied_job_directory_reads_its_own_artifacts_once_the_original_is_gone(migrated_db, tmp_path):
    original = tmp_path / "first" / "job"
    original.mkdir(parents=True)
    shutil.copy(migrated_db, original / "mlflow.db")
    tracker = MlflowTracker(job_store(original), original, "moved")
    with tracker.job_run("optimize") as run_id:
        tracker.log_text("# the report", "report.md")
        trace_id = tracker.trace_episode(make_episode())
    tracker.flush()
    with ui_cmd.serving(find_target(original)) as served:  # never moved: its own store, as it is
        assert served == find_target(original)
    copy = tmp_path / "elsewhere" / "job"
    shutil.copytree(original, copy)
    shutil.rmtree(original)
    stored = (copy / "mlflow.db").read_bytes()
    target = find_target(copy)
    with ui_cmd.serving(target) as served:
        snapshot = Path(served.uri.removeprefix("sqlite:///"))
        assert snapshot.is_file() and not snapshot.is_relative_to(copy)
        assert (served.artifacts, served.run_id) == (target.artifacts, run_id)
        client = MlflowClient(tracking_uri=served.uri)
        assert client.get_run(run_id).info.artifact_uri == f"{(copy / 'mlartifacts').as_uri()}/{run_id}/artifacts"
        assert client.get_experiment(tracker.experiment_id).artifact_location == (copy / "mlartifacts").as_uri()
        location = client.get_trace(trace_id).info.tags[MLFLOW_ARTIFACT_LOCATION]
        assert location.startswith(f"{(copy / 'mlartifacts').as_uri()}/traces/")
        report = download_artifacts(
            run_id=run_id, artifact_path="report.md", tracking_uri=served.uri, dst_path=tmp_path
        )
        assert Path(report).read_text() == "# the report"
    assert not snapshot.exists()  # removed once served
    assert (copy / "mlflow.db").read_bytes() == stored  # the user's copy is only read
    # A store copied without its artifacts has nothing to read in the copy: served as it is.
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(copy / "mlflow.db", bare / "mlflow.db")
    with ui_cmd.serving(find_target(bare)) as served:
        assert served == find_target(bare)


def test_a_store_that_cannot_be_read_is_served_as_it_is(tmp_path, capsys):
    (tmp_path / "mlflow.db").write_text("not a database")
    target = find_target(tmp_path)
    with ui_cmd.serving(target) as served:
        assert served == target
    assert "acon: warning: could not read where" in capsys.readouterr().err


def test_server_command_and_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "false")
    target = UiTarget("sqlite:////x/mlflow.db", Path("/x/mlartifacts"))
    command = server_command(target, 5123)
    assert command[1:4] == ["-m", "mlflow", "server"]
    joined = " ".join(command)
    assert "--backend-store-uri sqlite:////x/mlflow.db" in joined and "--host 127.0.0.1" in joined
    assert "--port 5123" in joined and "--artifacts-destination /x/mlartifacts" in joined
    env = server_env()
    assert env["MLFLOW_DISABLE_TELEMETRY"] == "true" and env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    assert env["MLFLOW_SERVER_ENABLE_JOB_EXECUTION"] == "false"


def test_free_port_prefers_the_default():
    with socket.socket() as busy:
        busy.bind((HOST, 0))
        busy.listen()
        taken = busy.getsockname()[1]
        assert free_port(taken) != taken
    assert free_port(taken) == taken


def _get(url: str) -> bytes:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=10) as response:
        return response.read()


def test_acon_ui_serves_the_job_and_stops_on_ctrl_c(job_dir):
    tracker = MlflowTracker(job_store(job_dir), job_dir, "ui")
    with tracker.job_run("optimize") as run_id:
        tracker.log_text("# hello from the report", "report.md")
    port = free_port(0)  # any free port
    process = subprocess.Popen(
        [sys.executable, "-m", "optimizer", "ui", str(job_dir), "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        url = process.stdout.readline().strip()  # printed once the server answers /health
        # The job's parent run first: its description is the report, its failures to review.
        assert url == f"http://127.0.0.1:{port}/#/experiments/{tracker.experiment_id}/runs/{run_id}"
        base = f"http://127.0.0.1:{port}"
        artifact = _get(f"{base}/get-artifact?path=report.md&run_uuid={run_id}")
        assert artifact == b"# hello from the report"
        assert b"<html" in _get(f"{base}/").lower()
        os.kill(process.pid, signal.SIGINT)  # only acon: it must stop the server's whole process group
        assert process.wait(60) == 0
        log = process.stderr.read()
        # Only acon's own lines: uvicorn's INFO lines and Starlette's deprecation warning go to the server log.
        assert all(line.startswith("acon: ") for line in log.splitlines()), log
        server_log = (job_dir / "mlflow_ui.log").read_text()
        assert f"Uvicorn running on http://127.0.0.1:{port}" in server_log, server_log
        assert "Traceback" not in server_log and "CancelledError" not in server_log, server_log
        assert "GET /" not in server_log, server_log  # no access log line per request
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex((HOST, port)) != 0:
                    break
            time.sleep(0.5)
        else:
            pytest.fail("the MLflow server still listens after acon ui stopped")
    finally:
        if process.poll() is None:  # a failed assertion: stop acon (and so its server) the same way
            os.kill(process.pid, signal.SIGINT)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


def test_acon_ui_on_a_busy_port_fails_in_one_line(job_dir):
    with socket.socket() as busy:
        busy.bind((HOST, 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "optimizer", "ui", str(job_dir), "--port", str(port)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode != 0 and done.stdout == ""  # no URL: nothing of ours is serving
    assert done.stderr.strip().splitlines() == [
        f"acon: error: port {port} on 127.0.0.1 is already in use; pick another --port or leave it out"
    ]


def test_server_log_goes_to_a_temporary_file_when_the_job_directory_cannot_take_it(tmp_path):
    # A job directory that cannot be written (a shared, read-only copy) must not block its UI.
    path, handle = ui_cmd._open_log(tmp_path / "not-a-directory" / ui_cmd.SERVER_LOG)
    handle.close()
    assert path.parent != tmp_path / "not-a-directory" and path.name.startswith("acon-mlflow-ui-")
    assert path.exists()
    path.unlink()


def test_a_server_that_dies_is_explained_by_its_log_last_line(tmp_path):
    log = tmp_path / ui_cmd.SERVER_LOG
    log.write_text("INFO: starting\nOSError: [Errno 98] address already in use\n\n")
    assert ui_cmd.last_line(log) == f": OSError: [Errno 98] address already in use (log: {log})"
    assert ui_cmd.last_line(None) == ""
    assert ui_cmd.last_line(tmp_path / "missing.log") == ""
