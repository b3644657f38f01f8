"""The tracking server killed mid-job: the job finishes with its results saved and says, last and non-zero,
that tracking is behind; resumed against a second server process on the same backend store, tracking
catches up, one run per candidate and per evaluation, as an uninterrupted job would have logged."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from mlflow import MlflowClient

from optimizer.cli.ui_cmd import HOST, UiTarget, free_port, stop
from optimizer.testing.scripted import scripted_models
from optimizer.testing.stub_server import StubServer
from optimizer.tracking.hooks import OptimizeTracking
from optimizer.tracking.outage import PENDING_FILE
from optimizer.tracking.store import sqlite_uri
from tests.tracking.conftest import start_mlflow_server

EXPERIMENT = "outage"


@pytest.fixture(autouse=True)
def environment():
    """The environment as it was: MLflow exports the tracking URI it is given (a server these tests kill),
    and the tracker sets its fail-fast HTTP settings, both process-wide."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


def write_config(tmp: Path, model_url: str, tracking_uri: str) -> Path:
    """A tiny tier-0 job (three train tasks, three baselines, one round): about ten tracked evaluations."""
    endpoint = f'base_url = "{model_url}"\nmodel = "scripted"\nbackoff_s = 0.0\n'
    text = "\n".join(
        [
            'name = "outage-job"',
            f'out = "{tmp / "job"}"',
            "[suite]",
            'type = "builtin"',
            "[run]",
            'agent = "reference"',
            "[tracking]",
            f'experiment = "{EXPERIMENT}"',
            f'uri = "{tracking_uri}"',
            "traces = false",  # traces are caught up like runs (once per episode key); left out for time
            "[optimize]",
            "train_limit = 3",
            "test_limit = 1",
            "val_fraction = 0",
            'warm_start = ["fifo", "mask_last_n", "clear_tool_uses"]',
            "[optimize.acon]",
            "llm_proposers = false",
            "[optimize.budget]",
            "rounds = 1",
            "max_candidates = 8",
            "[optimize.selection]",
            "select_top = 1",
            "confirm_top = 0",
            "[optimize.report]",
            'final_strategies = ["none"]',
            "[endpoints.agent]",
            endpoint,
            "[endpoints.compressor]",
            endpoint,
            "[endpoints.optimizer]",
            endpoint,
        ]
    )
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / "job.toml"
    path.write_text(text)
    return path


def kill(process: subprocess.Popen) -> None:
    """SIGKILL to the server and its workers: no shutdown, requests in flight are cut."""
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(10)


def runs_by_key(uri: str) -> Counter:
    """(parent key, key) of every run of the experiment, counted."""
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name(EXPERIMENT)
    runs = client.search_runs([experiment.experiment_id], max_results=5000)
    key = {r.info.run_id: r.data.tags.get("acon.key", r.data.tags.get("acon.job")) for r in runs}
    return Counter((key.get(r.data.tags.get("mlflow.parentRunId", "")), key[r.info.run_id]) for r in runs)


def contents(uri: str) -> dict:
    """Per run (by parent and key): its metric and param names and artifacts; per prompt: its versions."""
    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    experiment = client.get_experiment_by_name(EXPERIMENT)
    runs = client.search_runs([experiment.experiment_id], max_results=5000)
    key = {r.info.run_id: r.data.tags.get("acon.key", r.data.tags.get("acon.job")) for r in runs}
    out = {
        (key.get(r.data.tags.get("mlflow.parentRunId", "")), key[r.info.run_id]): (
            sorted(r.data.metrics),
            sorted(r.data.params),
            sorted(a.path for a in client.list_artifacts(r.info.run_id)),
        )
        for r in runs
    }
    prompts = {p.name: len(client.search_prompt_versions(p.name)) for p in client.search_prompts(max_results=100)}
    return {"runs": out, "prompts": prompts}


def screened(job_dir: Path) -> set[str]:
    state = json.loads((job_dir / "state.json").read_text())
    return {version for version, c in state["candidates"].items() if c.get("screens", {}).get("train")}


def test_a_server_killed_mid_job_is_caught_up_on_resume_once(tmp_path, run_cli, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    for key in ("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "MLFLOW_HTTP_REQUEST_TIMEOUT"):
        monkeypatch.delenv(key, raising=False)  # the job's own fail-fast settings are under test
    monkeypatch.setenv("ACON_HOME", str(tmp_path / "home"))
    port = free_port(0)
    url = f"http://{HOST}:{port}"
    target = UiTarget(sqlite_uri(tmp_path / "server" / "server.db"), tmp_path / "server" / "artifacts")
    (tmp_path / "server").mkdir()
    first = start_mlflow_server(target, port)
    real = OptimizeTracking.on_candidate
    logged: list[str] = []

    def killed_after_two(self, event):
        real(self, event)
        logged.append(event.candidate.version)
        if len(logged) == 2:
            kill(first)

    second = None
    try:
        with StubServer(scripted_models) as model_url:
            config = write_config(tmp_path / "remote", model_url, url)
            job_dir = tmp_path / "remote" / "job"
            monkeypatch.setattr(OptimizeTracking, "on_candidate", killed_after_two)
            started = time.monotonic()
            code, _, err = run_cli("optimize", str(config))
            outage_s = time.monotonic() - started
            monkeypatch.setattr(OptimizeTracking, "on_candidate", real)

            assert first.poll() is not None and len(logged) == 2, "the server should have died after 2 candidates"
            lines = err.strip().splitlines()
            assert code == 3, err
            assert lines[-1].startswith("acon: error: tracking incomplete: ") and url in lines[-1], lines[-1]
            assert "--resume" in lines[-1]
            warnings = [line for line in lines if "stopped answering" in line]
            assert len(warnings) == 1, err  # warned once, not per call
            assert url in warnings[0] and "--resume" in warnings[0], warnings
            # The job did all its work: every candidate screened, the report written.
            assert (job_dir / "report.json").exists()
            candidates = screened(job_dir)
            assert len(candidates) > 2, "candidates after the kill are what tracking has to catch up"
            pending = json.loads((job_dir / PENDING_FILE).read_text())["entries"]
            # The journal also holds the job run's closing writes (an entry without an event).
            events = [e["event"] for e in pending if e["event"] is not None]
            missed = {event["candidate"]["version"] for event in events if event["type"] == "candidate"}
            assert missed == candidates - set(logged)
            # Bounded retries: MLflow's defaults would spend minutes on the first failed call alone.
            assert outage_s < 120, outage_s

            second = start_mlflow_server(target, port)  # the same backend store, a new process
            code, _, err = run_cli("optimize", str(config), "--resume")
            assert code == 0, err
            assert "caught up" in err and not (job_dir / PENDING_FILE).exists()

            # The same job on a store that never went away: what the caught-up store must hold.
            monkeypatch.setenv("ACON_HOME", str(tmp_path / "home-reference"))
            # `mlflow.set_tracking_uri` exported the server's URI, which an empty `uri` would follow.
            monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
            reference = write_config(tmp_path / "reference", model_url, "")
            code, _, err = run_cli("optimize", str(reference))
            assert code == 0, err
        runs = runs_by_key(url)
        on_server = contents(url)
        job_run = json.loads((job_dir / "mlflow_run.json").read_text())["runs"]["optimize"]
        status = MlflowClient(tracking_uri=url).get_run(job_run).info.status
    finally:
        for process in (first, second):
            if process is not None:
                stop(process)
    assert max(runs.values()) == 1, [k for k, n in runs.items() if n > 1]  # nothing logged twice
    keys = {key for _, key in runs}
    assert {k for k in keys if k.startswith("candidate/")} == {f"candidate/{v}" for v in candidates}
    # Every run an uninterrupted job logs, under the same parent.
    reference_uri = sqlite_uri(tmp_path / "reference" / "job" / "mlflow.db")
    assert set(runs) == set(runs_by_key(reference_uri))
    # ... and what is in them: a candidate's screen metrics, guideline and diff, its registered prompts.
    expected = contents(reference_uri)
    for run, content in expected["runs"].items():
        assert on_server["runs"][run] == content, run
    assert on_server["prompts"] == expected["prompts"] and expected["prompts"]
    assert status == "FINISHED"


def test_an_acon_run_whose_server_dies_ends_non_zero_and_logs_on_rerun(tmp_path, run_cli, monkeypatch):
    """`acon run`: the server gone before the run is recorded; the rerun records it, once."""
    from optimizer.tracking.hooks import JobTracking

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("ACON_HOME", str(tmp_path / "home"))
    port = free_port(0)
    url = f"http://{HOST}:{port}"
    (tmp_path / "server").mkdir()
    target = UiTarget(sqlite_uri(tmp_path / "server" / "server.db"), tmp_path / "server" / "artifacts")
    first = start_mlflow_server(target, port)
    real = JobTracking.record_run

    def killed_first(self, result, *, agent, split):
        kill(first)
        real(self, result, agent=agent, split=split)

    second = None
    try:
        with StubServer(scripted_models) as model_url:
            config = write_config(tmp_path, model_url, url)
            monkeypatch.setattr(JobTracking, "record_run", killed_first)
            code, out, err = run_cli("run", str(config), "--limit", "3")
            monkeypatch.setattr(JobTracking, "record_run", real)
            assert code == 3 and "episodes:" in out, err
            assert err.strip().splitlines()[-1].startswith("acon: error: tracking incomplete: "), err
            second = start_mlflow_server(target, port)
            code, out, err = run_cli("run", str(config), "--limit", "3")
            assert code == 0, err
            assert not (tmp_path / "job" / PENDING_FILE).exists()
        runs = runs_by_key(url)
    finally:
        for process in (first, second):
            if process is not None:
                stop(process)
    evals = [key for (parent, key), n in runs.items() if key.startswith("eval/") for _ in range(n)]
    assert len(evals) == 1 and all(n == 1 for n in runs.values()), runs
