"""`tracked_job` for `acon run` / `acon compare`: one child run per evaluation, episodes traced, once."""

from __future__ import annotations

import shutil

from mlflow import MlflowClient

from optimizer.config import ExperimentConfig
from optimizer.context.strategies import parse_strategy
from optimizer.evaluate.strategy_runs import run_strategy, select_tasks
from optimizer.search.events import RunEvaluated
from optimizer.tracking import resolve_uri, tracked_job, tracker_for
from optimizer.tracking.parent_runs import ParentRuns


def smoke_config(tmp_path, *, enabled: bool = True) -> ExperimentConfig:
    return ExperimentConfig.model_validate(
        {
            "name": "smoke-run",
            "out": str(tmp_path / "job"),
            "suite": {"type": "smoke"},
            "run": {"agent": "reference", "split": "all"},
            "tracking": {"enabled": enabled},
        }
    )


def test_tracked_compare_job_records_each_evaluation_once(tmp_path, migrated_db):
    config = smoke_config(tmp_path)
    config.out_dir.mkdir(parents=True)
    shutil.copy(migrated_db, config.out_dir / "mlflow.db")
    tasks = select_tasks(config, "all", None)
    with tracked_job(config, "compare", split="all", agent="reference") as tracking:
        for name in ("none", "fifo"):
            result = run_strategy(config, tasks, parse_strategy(name), agent="reference", endpoints=None, split="all")
            tracking(RunEvaluated(result, "reference", "all"))
            tracking(RunEvaluated(result, "reference", "all"))  # a repeat is a no-op
    state = ParentRuns.read(config.out_dir)
    uri = resolve_uri(config.out_dir)
    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    parent = client.get_run(state.runs["compare"])
    assert parent.data.tags["tier"] == "0" and parent.data.params["suite.type"] == "smoke"
    children = client.search_runs([state.experiment_id], f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'")
    assert sorted(r.data.tags["strategy"] for r in children) == ["fifo", "none"]
    for child in children:
        assert child.data.metrics["success"] == 1.0 and child.data.metrics["scored"] == len(tasks)
        assert child.data.params["strategy.type"] == child.data.tags["strategy"]
        traces = client.search_traces(locations=[state.experiment_id], run_id=child.info.run_id)
        assert sorted(t.info.tags["acon.task"] for t in traces) == sorted(t.id for t in tasks)
        assert {t.info.tags["acon.tier"] for t in traces} == {"0"}


def test_disabled_tracking_yields_no_hooks(tmp_path):
    config = smoke_config(tmp_path, enabled=False)
    with tracked_job(config, "run") as tracking:
        assert tracking is None
    with tracker_for(config) as hooks:
        assert hooks is None
    assert not config.out_dir.exists()
