"""A job logged to a real `mlflow server` (started here on 127.0.0.1, artifacts proxied) holds what the same
job logs to a sqlite store: runs, params, metrics, artifacts, traces, registered prompts, read back through
the MLflow client. An unreachable server is one line before anything runs."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from mlflow import MlflowClient

from optimizer.cli.ui_cmd import HOST, UiTarget, free_port, stop
from optimizer.config import load_experiment
from optimizer.search.job import OptimizationJob
from optimizer.testing.scripted import scripted_models
from optimizer.testing.stub_server import StubServer
from optimizer.tracking import resolve_uri, tracker_for
from optimizer.tracking.parent_runs import ParentRuns
from optimizer.tracking.store import sqlite_uri
from tests.tracking.conftest import start_mlflow_server

EXPERIMENT = "remote-vs-sqlite"
# Figures that measure this machine, not the job: they differ between any two runs of it.
TIMED = re.compile(r"(^|[._/])(wall|model|latency|elapsed|seconds|duration)(_s)?($|[._/])|_s$")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("server")
    port = free_port(0)
    target = UiTarget(sqlite_uri(root / "server.db"), root / "artifacts")
    process = start_mlflow_server(target, port)
    try:
        yield SimpleNamespace(url=f"http://{HOST}:{port}", root=root)
    finally:
        stop(process)


def write_config(tmp: Path, model_url: str, tracking_uri: str) -> Path:
    endpoint = f'base_url = "{model_url}"\nmodel = "scripted"\nbackoff_s = 0.0\n'
    text = "\n".join(
        [
            'name = "remote-job"',
            f'out = "{tmp / "job"}"',
            "[suite]",
            'type = "builtin"',
            "[run]",
            'agent = "reference"',
            "[tracking]",
            f'experiment = "{EXPERIMENT}"',
            f'uri = "{tracking_uri}"',
            "[optimize]",
            "train_limit = 4",
            "test_limit = 2",
            "[optimize.budget]",
            "rounds = 1",
            "[optimize.selection]",
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


def run_job(tmp: Path, model_url: str, tracking_uri: str) -> tuple[MlflowClient, Path]:
    config = load_experiment(write_config(tmp, model_url, tracking_uri))
    OptimizationJob(config, log=lambda m: None).run(track=lambda: tracker_for(config))
    uri = resolve_uri(config.out_dir)
    assert uri == (tracking_uri or sqlite_uri(config.out_dir / "mlflow.db"))
    return MlflowClient(tracking_uri=uri, registry_uri=uri), config.out_dir.resolve()


def artifacts(client: MlflowClient, run_id: str, path: str | None = None) -> list[str]:
    found = []
    for item in client.list_artifacts(run_id, path):
        found += artifacts(client, run_id, item.path) if item.is_dir else [item.path]
    return sorted(found)


def snapshot(client: MlflowClient, job_dir: Path) -> dict:
    """Everything a reviewer reads of the job, with ids, URIs, timings and the job's own path taken out."""
    experiment = client.get_experiment_by_name(EXPERIMENT)
    runs = client.search_runs([experiment.experiment_id], max_results=1000)
    key = {r.info.run_id: r.data.tags.get("acon.key", r.data.tags.get("acon.job")) for r in runs}
    out: dict = {"runs": {}, "prompts": {}, "artifact_location": experiment.artifact_location}
    for run in runs:
        name = key[run.info.run_id]
        metrics = {k: v for k, v in run.data.metrics.items() if not TIMED.search(k)}
        history = {k: [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, k)] for k in metrics}
        traces = client.search_traces(
            locations=[experiment.experiment_id], run_id=run.info.run_id, max_results=500
        )  # the server refuses more per page
        out["runs"][name] = {
            "status": run.info.status,
            "parent": key.get(run.data.tags.get("mlflow.parentRunId", "")),
            "params": run.data.params,
            "metrics": metrics,
            "history": history,
            "tags": {
                k: v.replace(str(job_dir), "<job>")
                for k, v in run.data.tags.items()
                if k.startswith("acon.") or k in ("suite", "strategy")
            },
            "artifacts": artifacts(client, run.info.run_id),
            "traces": sorted(
                (
                    t.info.tags.get("acon.task"),
                    t.info.state,
                    (t.info.token_usage or {}).get("total_tokens"),
                    sorted(s.name for s in client.get_trace(t.info.trace_id).data.spans),
                )
                for t in traces
            ),
        }
    for prompt in client.search_prompts(max_results=1000):
        versions = client.search_prompt_versions(prompt.name)
        out["prompts"][prompt.name] = {
            "versions": sorted(
                (v.version, v.template, v.commit_message, tuple(sorted(v.aliases or ()))) for v in versions
            ),
            "best": client.get_prompt_version_by_alias(prompt.name, "best").version,
        }
    return out


def test_the_same_job_on_a_server_and_on_sqlite_logs_the_same(server, tmp_path, monkeypatch):
    # `mlflow.set_tracking_uri` exports MLFLOW_TRACKING_URI, which an empty `[tracking] uri` would follow to
    # an earlier test's store.
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    with StubServer(scripted_models) as model_url:
        # Each job its own reply cache: the second would otherwise get the first one's compressions as hits.
        monkeypatch.setenv("ACON_HOME", str(tmp_path / "home-sqlite"))
        local = snapshot(*run_job(tmp_path / "sqlite", model_url, ""))
        monkeypatch.setenv("ACON_HOME", str(tmp_path / "home-remote"))
        remote = snapshot(*run_job(tmp_path / "remote", model_url, server.url))
    assert remote["artifact_location"].startswith("mlflow-artifacts:"), remote["artifact_location"]  # proxied
    assert any((server.root / "artifacts").rglob("*.html")), "diff artifacts should be on the server's disk"
    assert not (tmp_path / "remote" / "job" / "mlflow.db").exists()
    assert set(remote["runs"]) == set(local["runs"]) and len(local["runs"]) > 5
    for name, run in local["runs"].items():
        for part in ("status", "parent", "params", "metrics", "history", "tags", "artifacts", "traces"):
            assert remote["runs"][name][part] == run[part], (name, part)
    assert any(r["traces"] for r in local["runs"].values()) and any(r["artifacts"] for r in local["runs"].values())
    assert remote["prompts"] == local["prompts"] and local["prompts"]
    state = ParentRuns.read(tmp_path / "remote" / "job")
    assert state is not None and state.tracking_uri == server.url


def test_an_unreachable_server_is_one_line_before_any_episode(tmp_path, run_cli):
    url = f"http://{HOST}:{free_port(0)}"  # nothing listens there
    with StubServer(scripted_models) as model_url:
        config = write_config(tmp_path, model_url, url)
        code, _, err = run_cli("optimize", str(config))
    lines = err.strip().splitlines()
    assert code != 0 and len(lines) == 1, err
    assert lines[0].startswith("acon: error: ") and url in lines[0] and "not reachable" in lines[0], err
    assert not (tmp_path / "job" / "runs").exists() or not any((tmp_path / "job" / "runs").iterdir())
