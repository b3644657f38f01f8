"""MLflow tracker on a real sqlite store (one per module): runs, resume, artifacts, traces, registry."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import mlflow
import pytest
from mlflow import MlflowClient

from optimizer.context.guideline import Guideline, RetentionPolicy
from optimizer.context.moves import SummarizeOld
from optimizer.context.prompt_registry import load_from_registry
from optimizer.errors import ConfigError
from optimizer.tracking import ParetoPoint
from optimizer.tracking.mlflow_tracker import MlflowTracker
from optimizer.tracking.parent_runs import STATE_FILE
from optimizer.tracking.store import job_store
from tests.tracking.conftest import EPISODE_USAGE, make_episode, make_guideline


@pytest.fixture(scope="module")
def store(job_dir):
    return job_store(job_dir)


@pytest.fixture(scope="module")
def client(store) -> MlflowClient:
    return MlflowClient(tracking_uri=store.uri, registry_uri=store.uri)


def open_tracker(store, job_dir: Path, experiment: str, **kwargs) -> MlflowTracker:
    """A tracker as a new process would open it (nothing cached from earlier trackers)."""
    return MlflowTracker(store, job_dir, experiment, **kwargs)


def children(client: MlflowClient, tracker: MlflowTracker, parent: str) -> dict[str, str]:
    runs = client.search_runs([tracker.experiment_id], f"tags.`mlflow.parentRunId` = '{parent}'")
    return {r.data.tags["acon.key"]: r.info.run_id for r in runs}


def test_job_run_nests_rounds_and_candidates_with_one_point_per_round(store, job_dir, client, tmp_path):
    tracker = open_tracker(store, tmp_path, "nesting")
    with tracker.job_run(
        "optimize", params={"endpoints": {"agent": {"model": "m1"}}, "seed": 0}, tags={"suite": "smoke", "tier": "0"}
    ) as parent:
        assert mlflow.active_run().info.run_id == parent
        for round in (1, 2, 3):
            with tracker.child_run(f"round-{round}", f"round {round}", tags={"round": str(round)}) as rid:
                assert tracker.active_run_id() == rid
                assert mlflow.active_run().info.run_id == parent  # only the job run is MLflow's active run
                with tracker.child_run(f"round-{round}/cand-a", "cand-a", params={"origin": "llm-ut"}):
                    tracker.log_metrics({"success": 0.5, "peak_tokens_mean": 1000.0}, step=round)
            tracker.log_metrics({"success": 0.25 * round, "pairs": 3 - round, "skipped": None}, step=round)
            tracker.log_metrics({"success": 0.99}, step=round)  # a second point at the same step is dropped
        assert tracker.active_run_id() == parent
    assert tracker.active_run_id() is None and mlflow.active_run() is None

    run = client.get_run(parent)
    assert run.info.status == "FINISHED" and run.info.run_name == "optimize"
    assert run.data.params == {"endpoints.agent.model": "m1", "seed": "0"}
    assert run.data.tags["suite"] == "smoke" and run.data.tags["acon.job"] == "optimize"
    history = client.get_metric_history(parent, "success")
    assert [(m.step, m.value) for m in history] == [(1, 0.25), (2, 0.5), (3, 0.75)]
    assert "skipped" not in run.data.metrics
    rounds = children(client, tracker, parent)
    assert sorted(rounds) == ["round-1", "round-2", "round-3"]
    candidate = children(client, tracker, rounds["round-2"])
    assert list(candidate) == ["round-2/cand-a"]
    cand_run = client.get_run(candidate["round-2/cand-a"])
    assert cand_run.data.params == {"origin": "llm-ut"} and cand_run.info.status == "FINISHED"
    assert [m.step for m in client.get_metric_history(cand_run.info.run_id, "peak_tokens_mean")] == [2]
    experiment = client.get_experiment(tracker.experiment_id)
    assert experiment.artifact_location == (job_dir / "mlartifacts").as_uri()


def test_resumed_job_reopens_its_runs_without_duplicates(store, client, tmp_path):
    first = open_tracker(store, tmp_path, "resume")
    episode = make_episode()
    with first.job_run("optimize", params={"rounds": 2}) as parent:
        with first.child_run("round-1", "round 1") as round1:
            first.log_metrics({"success": 0.5}, step=1)
            assert first.trace_episode(episode) is not None
        first.log_metrics({"success": 0.5}, step=1)
    state = json.loads((tmp_path / STATE_FILE).read_text())
    assert state["runs"] == {"optimize": parent} and state["tracking_uri"] == store.uri

    again = open_tracker(store, tmp_path, "resume")  # as after a kill: a new process, nothing cached
    with again.job_run("optimize", params={"rounds": 3}) as reopened:
        assert reopened == parent
        with again.child_run("round-1", "round 1") as same:
            assert same == round1
            again.log_metrics({"success": 0.7}, step=1)  # already logged for round 1: kept once
            again.log_table([{"task_id": "t-1", "success": True}], "tables/episodes.json")
            again.log_table([{"task_id": "t-1", "success": True}], "tables/episodes.json")  # recorded again: once
            assert again.trace_episode(episode) is None  # already traced in this run
            assert again.trace_episode(make_episode("t-2")) is not None
        with again.child_run("round-2", "round 2"):
            again.log_metrics({"success": 0.6}, step=2)
        again.log_metrics({"success": 0.6}, step=2)

    assert sorted(children(client, again, parent)) == ["round-1", "round-2"]
    assert [(m.step, m.value) for m in client.get_metric_history(parent, "success")] == [(1, 0.5), (2, 0.6)]
    assert [m.value for m in client.get_metric_history(round1, "success")] == [0.5]
    run = client.get_run(parent)
    assert run.data.tags["acon.resumes"] == "1" and run.info.status == "FINISHED"
    assert run.data.params["rounds"] == "2"  # params are immutable; the change is recorded as a tag
    assert json.loads(run.data.tags["acon.changed_params"]) == {"rounds": ["2", "3"]}
    traces = client.search_traces(locations=[again.experiment_id], run_id=round1, include_spans=False)
    assert sorted(t.info.tags["acon.task"] for t in traces) == ["t-1", "t-2"]
    table = json.loads(Path(client.download_artifacts(round1, "tables/episodes.json", str(tmp_path))).read_text())
    assert table == {"columns": ["task_id", "success"], "data": [["t-1", True]]}
    logged = json.loads(client.get_run(round1).data.tags["mlflow.loggedArtifacts"])
    assert logged == [{"path": "tables/episodes.json", "type": "table"}]


def test_a_run_that_raises_is_marked_failed_or_killed(store, client, tmp_path):
    tracker = open_tracker(store, tmp_path, "failures")
    with pytest.raises(ValueError), tracker.job_run("compare") as parent, tracker.child_run("eval") as child:
        raise ValueError("boom")
    assert client.get_run(parent).info.status == "FAILED" and client.get_run(child).info.status == "FAILED"
    with pytest.raises(KeyboardInterrupt), tracker.job_run("run") as killed:
        raise KeyboardInterrupt
    assert client.get_run(killed).info.status == "KILLED"
    assert mlflow.active_run() is None


def test_logging_outside_a_job_run_is_an_error(store, tmp_path):
    tracker = open_tracker(store, tmp_path, "outside")
    with pytest.raises(RuntimeError, match="no active run"), tracker.child_run("round-1"):
        pass
    with pytest.raises(RuntimeError, match="no active run"):
        tracker.log_metrics({"success": 1.0}, step=1)
    with tracker.job_run("optimize"), pytest.raises(RuntimeError, match="already open"), tracker.job_run("compare"):
        pass


def test_a_tracker_leaves_the_users_tracking_uri_as_it_was(store, tmp_path, monkeypatch):
    # mlflow.set_tracking_uri writes MLFLOW_TRACKING_URI into the environment, and acon reads that variable as
    # the user's choice of store: the next job in this process (or a process it starts) logged into this one's.
    from optimizer.config import TrackingConfig
    from optimizer.tracking import resolve_store

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("MLFLOW_REGISTRY_URI", raising=False)
    open_tracker(store, tmp_path / "first", "first")
    assert "MLFLOW_TRACKING_URI" not in os.environ and "MLFLOW_REGISTRY_URI" not in os.environ
    assert mlflow.get_tracking_uri() == store.uri  # where its spans are exported
    second = tmp_path / "second"
    assert resolve_store(TrackingConfig(), second).uri == f"sqlite:///{second / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://tracking.example:5000")
    open_tracker(store, tmp_path / "third", "third")
    assert os.environ["MLFLOW_TRACKING_URI"] == "http://tracking.example:5000"


def test_child_runs_from_worker_threads_nest_under_the_job(store, client, tmp_path):
    tracker = open_tracker(store, tmp_path, "threads")
    with tracker.job_run("compare") as parent:

        def evaluate(name: str) -> None:
            with tracker.child_run(name) as rid:
                tracker.log_metrics({"success": 1.0}, step=0)
                assert tracker.active_run_id() == rid

        threads = [threading.Thread(target=evaluate, args=(f"eval-{i}",)) for i in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert tracker.active_run_id() == parent
    runs = children(client, tracker, parent)
    assert sorted(runs) == ["eval-0", "eval-1", "eval-2"]
    assert all(client.get_run(r).data.metrics == {"success": 1.0} for r in runs.values())


def test_artifacts_a_reviewer_opens(store, client, tmp_path):
    tracker = open_tracker(store, tmp_path, "artifacts")
    seed = make_guideline()
    better = make_guideline("Keep every id, error, amount and date verbatim.", name="round-1")
    points = [
        ParetoPoint("none", 0.9, 6000, baseline=True),
        ParetoPoint("seed", 0.6, 3000),
        ParetoPoint("cand-1", 0.8, 2500),
    ]
    with tracker.job_run("optimize") as parent:
        assert tracker.log_guideline(seed, round=0) == f"guidelines/r00-seed-{seed.version}.md"
        assert tracker.log_guideline(better) == f"guidelines/round-1-{better.version}.md"
        diff_path = tracker.log_guideline_diff(seed, better)
        tracker.log_pair_diff("task/7", "<html><body>side by side</body></html>", "### task 7\n- missing", round=1)
        rows = [{"task_id": "a", "success": True, "missing": ["ORD-1"]}, {"task_id": "b", "x": 1.5}]
        tracker.log_table(rows, "tables/pairs_r01.json")
        assert tracker.log_pareto(points, round=1) == "pareto/r01.png"
        tracker.log_pareto(points, front=["cand-1"])
        tracker.log_report("# Report\n\nchosen: round-1", {"chosen": better.version})
        with pytest.raises(ValueError, match=r"\.json"):
            tracker.log_table([{"a": 1}], "tables/pairs.csv")

    root = Path(client.get_run(parent).info.artifact_uri.removeprefix("file://"))
    assert root.is_relative_to(store.artifact_root)
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert files == sorted(
        [
            f"guidelines/r00-seed-{seed.version}.md",
            f"guidelines/round-1-{better.version}.md",
            diff_path,
            "pairs/r01/task_7.html",
            "pairs/r01/task_7.md",
            "tables/pairs_r01.json",
            "pareto/r01.png",
            "pareto/r01.json",
            "pareto/final.png",
            "pareto/final.json",
            "report.md",
            "report.json",
        ]
    )
    assert Guideline.from_markdown((root / f"guidelines/round-1-{better.version}.md").read_text()) == better
    assert diff_path.endswith(".html") and better.version in (root / diff_path).read_text()
    assert (root / "pareto/r01.png").read_bytes().startswith(b"\x89PNG")
    assert json.loads((root / "pareto/r01.json").read_text())["front"] == ["none", "cand-1"]
    assert json.loads((root / "pareto/final.json").read_text())["front"] == ["cand-1"]
    table = mlflow.load_table("tables/pairs_r01.json", run_ids=[parent])
    assert list(table["task_id"]) == ["a", "b"] and table["missing"][0] == '["ORD-1"]'
    assert json.loads((root / "report.json").read_text()) == {"chosen": better.version}


def test_one_trace_per_episode_with_token_usage_linked_to_its_run(store, client, tmp_path):
    tracker = open_tracker(store, tmp_path, "traces")
    started = time.time() - 60
    with tracker.job_run("run") as parent:
        with tracker.child_run("eval-guideline") as child:
            ids = [
                tracker.trace_episode(make_episode(f"t-{i}"), {"acon.round": "1"}, started_at=started) for i in range(2)
            ]
        assert tracker.trace_episode(make_episode("t-job", outcome="failure")) is not None
    # job_run flushed on exit: everything is readable now.
    traces = client.search_traces(locations=[tracker.experiment_id], run_id=child)
    assert sorted(t.info.trace_id for t in traces) == sorted(ids)
    trace = client.get_trace(ids[0])
    assert {k: trace.info.token_usage[k] for k in EPISODE_USAGE} == EPISODE_USAGE
    assert trace.info.trace_metadata["mlflow.sourceRun"] == child
    tags = trace.info.tags
    assert (tags["acon.task"], tags["acon.strategy"], tags["acon.outcome"], tags["acon.guideline"]) == (
        "t-0",
        "guideline",
        "success",
        "g123",
    )
    assert tags["acon.round"] == "1"
    assert trace.info.request_time == int(started * 1000)
    spans = trace.data.spans
    assert {s.span_type for s in spans} == {"AGENT", "CHAT_MODEL", "TOOL", "CHAIN", "MEMORY", "LLM"}
    assert len(spans) == 9
    root = next(s for s in spans if s.parent_id is None)
    assert all(root.start_time_ns <= s.start_time_ns <= s.end_time_ns <= root.end_time_ns for s in spans)
    model = next(s for s in spans if s.name == "agent step 0")
    assert model.get_attribute("mlflow.chat.tokenUsage")["input_tokens"] == 120
    compress = next(s for s in spans if s.name == "compress replay: summarize")
    assert compress.get_attribute("acon.tokens_saved") == 25
    job_traces = client.search_traces(locations=[tracker.experiment_id], run_id=parent)
    assert [t.info.tags["acon.outcome"] for t in job_traces] == ["failure"]
    assert job_traces[0].info.state.value == "ERROR" and trace.info.state.value == "OK"
    # acon's verdicts travel with the trace as feedback (the evaluation views' columns).
    verdicts = {a.name: a.value for a in trace.info.assessments}
    assert verdicts == {"success": True, "peak_tokens": 160, "blocking": 0}
    failed = {a.name: a.value for a in client.get_trace(job_traces[0].info.trace_id).info.assessments}
    assert failed["success"] is False
    assert trace.info.tags["mlflow.traceName"] == "episode t-0 · guideline"


def test_traces_can_be_switched_off(store, client, tmp_path):
    tracker = open_tracker(store, tmp_path, "no-traces", traces="none")
    with tracker.job_run("run") as parent:
        assert tracker.trace_episode(make_episode()) is None
    assert len(client.search_traces(locations=[tracker.experiment_id], run_id=parent)) == 0


def test_registered_guidelines_round_trip_and_best_alias(store, client, tmp_path):
    tracker = open_tracker(store, tmp_path, "registry")
    seed = make_guideline()
    policy = RetentionPolicy(history=(SummarizeOld(over=999, keep_last=3),))
    chosen = Guideline(
        name="round-2",
        description="fewer tokens",
        policy=policy,
        history="Summarize {{x}} tersely.",
        observation="Quote ids.",
        provenance={"round": 2, "origin": "llm-co"},
    )
    with tracker.job_run("optimize") as parent:
        first = tracker.register_guideline(seed)
        assert first.history == "prompts:/acon-registry-history/1"
        assert tracker.register_guideline(seed) == first  # idempotent per hash
        best = tracker.set_best(chosen)
        assert best.observation == "prompts:/acon-registry-observation/2"
    linked = json.loads(client.get_run(parent).data.tags["mlflow.linkedPrompts"])  # the run's Prompts panel
    logged = {f"{p['name']}/{p['version']}" for p in linked}
    assert logged == {
        "acon-registry-history/1",
        "acon-registry-observation/1",
        "acon-registry-history/2",
        "acon-registry-observation/2",
    }
    assert client.get_run(parent).data.tags["acon.best_guideline"] == chosen.version

    for ref in (
        "acon-registry-history@best",
        "acon-registry-observation@best",
        "acon-registry@best",
        "registry@best",  # the experiment's own name, as a user of `acon optimize` knows it
        "prompts:/acon-registry-history/2",
    ):
        loaded = load_from_registry(ref, store.uri)
        assert loaded == chosen and loaded.version == chosen.version, ref
    assert load_from_registry("acon-registry-observation/1", store.uri) == seed

    later = open_tracker(store, tmp_path, "registry")  # a new process finds the versions by their hash tag
    with later.job_run("optimize"):
        assert later.register_guideline(chosen) == best
        later.set_best(seed)  # the alias moves; the next load sees it at once (no alias cache)
    assert load_from_registry("acon-registry@best", store.uri) == seed
    assert len(client.search_prompt_versions("acon-registry-history")) == 2

    with pytest.raises(ConfigError, match=r"not found|does not exist"):
        load_from_registry("acon-registry-history@nope", store.uri)
    with pytest.raises(
        ConfigError, match=r"no guideline registered as 'missing-prompt' in this store \(it holds acon-registry\)"
    ):
        load_from_registry("missing-prompt/1", store.uri)


def test_tagging_a_guideline_the_store_never_registered_registers_it(store, client, tmp_path):
    # A resumed job on a fresh store tags the candidates it rejected before that store existed.
    tracker = open_tracker(store, tmp_path, "late-tags")
    rejected = make_guideline(history="Keep every receipt id.", name="rejected")
    with tracker.job_run("optimize"):
        tracker.tag_guideline(rejected, {"acon.status": "rejected"})
    versions = client.search_prompt_versions("acon-late-tags-history")
    assert [v.tags.get("acon.status") for v in versions] == ["rejected"]
