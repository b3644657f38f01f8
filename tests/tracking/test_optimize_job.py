"""A small `acon optimize` job (built-in suite, scripted models) read back through the MLflow client."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from mlflow import MlflowClient

from optimizer.agent.episode import Episode
from optimizer.config import ExperimentConfig, load_experiment
from optimizer.evaluate.codec import decode_episode
from optimizer.report.file import read_report
from optimizer.search.job import OptimizationJob
from optimizer.testing.scripted import scripted_models
from optimizer.testing.stub_server import StubServer
from optimizer.tracking import load_from_registry, resolve_uri, tracker_for
from optimizer.tracking.parent_runs import ParentRuns
from tests.conftest import ROOT, env_without_mlflow


def job_config(tmp: Path, url: str, traces: str = "all") -> ExperimentConfig:
    """Two rounds on four built-in train tasks, tier 0 only, every model role on the scripted server; every
    episode traced unless `traces` says otherwise."""
    endpoint = f'base_url = "{url}"\nmodel = "scripted"\nbackoff_s = 0.0\n'
    text = "\n".join(
        [
            'name = "scripted-job"',
            f'out = "{tmp / "job"}"',
            "[suite]",
            'type = "builtin"',
            "[run]",
            'agent = "reference"',
            "[tracking]",
            'experiment = "scripted"',
            f'traces = "{traces}"',
            "[optimize]",
            "train_limit = 6",
            "test_limit = 4",
            "[optimize.budget]",
            "rounds = 2",
            "[optimize.selection]",
            "confirm_top = 0",
            "[optimize.report]",
            'final_strategies = ["none", "fifo"]',
            "[endpoints.agent]",
            endpoint,
            "[endpoints.compressor]",
            endpoint,
            "[endpoints.optimizer]",
            endpoint,
        ]
    )
    path = tmp / "job.toml"
    path.write_text(text)
    return load_experiment(path)


def run_tracked(config: ExperimentConfig, migrated_db: Path) -> tuple[OptimizationJob, dict, MlflowClient]:
    """Run the job into a fresh copy of the migrated store; the job, its report and a client on the store."""
    config.out_dir.mkdir(parents=True)
    shutil.copy(migrated_db, config.out_dir / "mlflow.db")
    job = OptimizationJob(config, log=lambda m: None)
    report = job.run(track=lambda: tracker_for(config))
    uri = resolve_uri(config.out_dir)
    return job, report, MlflowClient(tracking_uri=uri, registry_uri=uri)


@pytest.fixture(scope="module")
def finished(tmp_path_factory, migrated_db):
    tmp = tmp_path_factory.mktemp("optimize")
    with StubServer(scripted_models) as url:
        config = job_config(tmp, url)
        _, report, client = run_tracked(config, migrated_db)
        state = ParentRuns.read(config.out_dir)
        yield SimpleNamespace(config=config, report=report, client=client, state=state)


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory, migrated_db):
    # MLflow's tracking URI and trace exporter are process-wide and `finished` ran its job on another store in
    # this process: this job gets a process of its own, as every `acon optimize` does.
    tmp = tmp_path_factory.mktemp("reviewed")
    with StubServer(scripted_models) as url:
        config = job_config(tmp, url, traces="reviewed")
        config.out_dir.mkdir(parents=True)
        shutil.copy(migrated_db, config.out_dir / "mlflow.db")
        command = "import sys\nfrom optimizer import cli\nsys.argv = ['acon', 'optimize', sys.argv[1]]\ncli.main()"
        done = subprocess.run(
            [sys.executable, "-c", command, str(tmp / "job.toml")],
            cwd=ROOT,
            env=env_without_mlflow(),
            capture_output=True,
            text=True,
            timeout=1200,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]
    uri = resolve_uri(config.out_dir)
    yield SimpleNamespace(
        config=config,
        report=read_report(config.out_dir / "report.json"),
        client=MlflowClient(tracking_uri=uri, registry_uri=uri),
        state=ParentRuns.read(config.out_dir),
    )


def runs_by_key(client: MlflowClient, state: ParentRuns) -> dict[str, object]:
    runs = client.search_runs([state.experiment_id], max_results=1000)
    return {r.data.tags.get("acon.key", r.data.tags.get("acon.job")): r for r in runs}


def episodes_in(directory: Path) -> list[Episode]:
    lines = (directory / "episodes.jsonl").read_text().splitlines()
    return [decode_episode(json.loads(line)) for line in lines if line]


def test_parent_and_nested_runs(finished):
    config, report, client, state = finished.config, finished.report, finished.client, finished.state
    runs = runs_by_key(client, state)
    parent = runs["optimize"]
    assert parent.info.run_id == state.runs["optimize"] and parent.info.status == "FINISHED"
    assert parent.data.params["endpoints.compressor.model"] == "scripted"
    assert parent.data.tags["suite"] == "builtin"
    assert parent.data.tags["acon.chosen"] == report.chosen.version
    parent_of = {key: run.data.tags.get("mlflow.parentRunId") for key, run in runs.items()}
    rounds = [k for k in runs if k.startswith("round/")]
    assert "round/00" in rounds and "round/01" in rounds
    assert all(parent_of[k] == parent.info.run_id for k in [*rounds, "final"])
    candidates = [k for k in runs if k.startswith("candidate/")]
    assert candidates and all(parent_of[k] in {runs[r].info.run_id for r in rounds} for k in candidates)
    evals = [k for k in runs if k.startswith("eval/")]
    run_dirs = {p.name for p in (config.out_dir / "runs").iterdir() if p.is_dir()}
    assert {k.removeprefix("eval/") for k in evals} == run_dirs  # every evaluation, exactly once
    final_children = {k.removeprefix("eval/") for k in evals if parent_of[k] == runs["final"].info.run_id}
    assert final_children == {d for d in run_dirs if "-test-" in d}


def test_metric_history_has_one_point_per_round(finished):
    report, client, state = finished.report, finished.client, finished.state
    parent = state.runs["optimize"]
    rounds = [r.summary.round for r in report.rounds]
    for key in ("train_success", "train_peak_tokens_mean"):  # step 0: the seed, where every chart starts
        steps = [m.step for m in client.get_metric_history(parent, key)]
        assert steps == [0, *rounds], key
    for key in ("pairs", "pareto_size"):
        steps = [m.step for m in client.get_metric_history(parent, key)]
        assert steps == rounds, key
    assert [m.step for m in client.get_metric_history(parent, "test_success")] == [rounds[-1]]
    # every figure on the job run names its split: none of the bare names an evaluation run uses
    assert not {"success", "peak_tokens_mean"} & set(client.get_run(parent).data.metrics)


def test_diff_html_pareto_png_and_report_artifacts(finished):
    report, client, state = finished.report, finished.client, finished.state
    runs = runs_by_key(client, state)

    def files(run) -> set[str]:
        root = Path(run.info.artifact_uri.removeprefix("file://"))
        return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}

    job_files = files(runs["optimize"])
    assert {"report.md", "report.json", "pareto/final.png", "pareto/test.png", "diffs/seed-to-chosen.html"} <= job_files
    round1 = files(runs["round/01"])
    assert "pareto/r01.png" in round1 and "tables/pairs.json" in round1
    pairs = report.rounds[0].summary.pairs
    assert len([f for f in round1 if f.startswith("pairs/r01/") and f.endswith(".html")]) == pairs > 0
    candidate = next(r for k, r in runs.items() if k.startswith("candidate/") and r.data.params.get("parent"))
    assert any(f.startswith("diffs/vs-parent-") and f.endswith(".html") for f in files(candidate))
    assert any(f.startswith("guidelines/") and f.endswith(".md") for f in files(candidate))


def test_a_trace_per_evaluated_episode_with_token_usage(finished):
    config, client, state = finished.config, finished.client, finished.state
    runs = runs_by_key(client, state)
    for key, run in runs.items():
        if not key.startswith("eval/"):
            continue
        episodes = episodes_in(config.out_dir / "runs" / key.removeprefix("eval/"))
        traces = client.search_traces(locations=[state.experiment_id], run_id=run.info.run_id)
        assert sorted(t.info.tags["acon.task"] for t in traces) == sorted(e.task_id for e in episodes), key
        compressor = sum(e.metrics.compressor_tokens for e in episodes)
        if compressor:  # tier 0 spends no agent tokens; the compressor's show as usage
            assert sum((t.info.token_usage or {}).get("total_tokens", 0) for t in traces) == compressor


def test_chosen_guideline_is_registered_with_alias_best(finished):
    config, report, client = finished.config, finished.report, finished.client
    chosen = load_from_registry("acon-scripted@best", resolve_uri(config.out_dir))
    assert chosen.version == report.chosen.version
    versions = client.search_prompt_versions("acon-scripted-history")
    from optimizer.search.state import JobDir

    screened = [c for c in JobDir(config.out_dir).load_state().candidates.values() if "train" in c.screens]
    assert len(versions) == len({c.version for c in screened})


def test_resumed_job_adds_no_runs_or_traces(finished):
    config, client, state = finished.config, finished.client, finished.state
    runs_before = len(client.search_runs([state.experiment_id], max_results=1000))
    traces_before = len(client.search_traces(locations=[state.experiment_id], max_results=1000))
    assessments_before = sum(len(t.info.assessments) for t in _traces(client, state.experiment_id))
    job = OptimizationJob(config, resume=True, log=lambda m: None)
    job.run(track=lambda: tracker_for(config))
    assert len(client.search_runs([state.experiment_id], max_results=1000)) == runs_before
    assert len(client.search_traces(locations=[state.experiment_id], max_results=1000)) == traces_before
    assert sum(len(t.info.assessments) for t in _traces(client, state.experiment_id)) == assessments_before
    assert client.get_run(state.runs["optimize"]).data.tags["acon.resumes"] == "1"


def _traces(client: MlflowClient, experiment_id: str) -> list:
    found, token = [], None
    while True:
        page = client.search_traces(locations=[experiment_id], max_results=500, page_token=token)
        found += page
        token = page.token
        if not token:
            return found


def test_failed_traces_carry_their_pair_and_assessments_compressor_spans_their_io(finished):
    """Read through the MLflow client, as the UI does: what a reviewer needs is on the traces themselves."""
    client, state = finished.client, finished.state
    traces = _traces(client, state.experiment_id)
    assert traces and all(
        {"success", "peak_tokens", "blocking"} <= {a.name for a in t.info.assessments} for t in traces
    )
    full = {
        (t.info.tags["acon.task"], t.info.tags["acon.agent"], t.info.tags["acon.split"]): t
        for t in traces
        if t.info.tags["acon.strategy"] == "none"
    }
    failed = [t for t in traces if t.info.tags["acon.outcome"] == "failure" and t.info.tags["acon.strategy"] != "none"]
    paired = [
        t
        for t in failed
        if full[(t.info.tags["acon.task"], t.info.tags["acon.agent"], t.info.tags["acon.split"])].info.tags[
            "acon.outcome"
        ]
        == "success"
    ]
    assert paired, "the scripted job must produce at least one failure full context solved"
    for trace in paired:
        tags = trace.info.tags
        assert tags["acon.pair.role"] == "compressed" and tags["acon.pair.kind"] == "failure"
        assert tags["acon.pair"] == f"{tags['acon.task']} · {tags['acon.strategy']}"
        assert tags["acon.pair.missing"] and tags["acon.pair.checkpoint"]
        verdicts = {a.name: a for a in trace.info.assessments}
        assert verdicts["success"].value is False
        assert verdicts["missing_facts"].value and verdicts["missing_facts"].rationale
        assert tags["acon.pair.missing"].startswith(verdicts["missing_facts"].value[0])
        other = client.get_trace(tags["acon.pair.other_trace"]).info
        assert other.tags["acon.pair.role"] == "full" and other.tags["acon.outcome"] == "success"
        assert other.tags["acon.task"] == tags["acon.task"]
        diff_run = client.get_run(tags["acon.pair.diff_run"])
        root = Path(diff_run.info.artifact_uri.removeprefix("file://"))
        assert tags["acon.task"] in (root / tags["acon.pair.diff"]).read_text()
    assert all(t.info.tags["mlflow.traceName"].startswith(f"episode {t.info.tags['acon.task']} · ") for t in traces)
    compressors = [s for t in traces for s in t.data.spans if s.name == "compressor"]
    assert compressors, "the seed's LLM compressor ran: its spans must be there"
    for span in compressors:
        assert span.inputs["prompt"] and "<data source=" in span.inputs["prompt"]
        assert span.inputs["trust"].startswith("untrusted") and span.outputs["reply"]


def test_the_chosen_prompt_version_carries_the_alias_and_prompt_tags(finished):
    report, client = finished.report, finished.client
    chosen = report.chosen.version
    for name in ("acon-scripted-history", "acon-scripted-observation"):
        version = client.get_prompt_version_by_alias(name, "best")
        assert version.tags["acon.version"] == chosen and version.tags["acon.status"] == "chosen"
        prompt_tags = client.get_prompt(name).tags
        assert prompt_tags["acon.chosen"] == chosen
        for key in ("acon.chosen", "acon.chosen_candidate", "acon.experiment", "acon.test_peak_vs_none"):
            assert version.tags[key] == prompt_tags[key], key
        assert version.tags["acon.origin"] == report.chosen.origin and "acon.candidate" in version.tags
        assert "policy {" in version.commit_message
    statuses = {v.tags.get("acon.status") for v in client.search_prompt_versions("acon-scripted-history")}
    assert statuses <= {"screened", "rejected", "chosen"}
    exported = load_from_registry("acon-scripted@best", resolve_uri(finished.config.out_dir), provenance=True)
    registry = exported.provenance["registry"]
    assert registry["ref"] == "acon-scripted@best" and registry["status"] == "chosen"
    assert registry["origin"] == report.chosen.origin and registry["history"].startswith("acon-scripted-history/")
    assert exported.description.startswith(f"Registered by acon: {registry['candidate']}")
    assert exported.version == chosen


def test_parent_run_is_the_front_page(finished):
    report, client, state = finished.report, finished.client, finished.state
    parent = client.get_run(state.runs["optimize"])
    text = parent.data.tags["mlflow.note.content"]
    assert f"`{report.chosen.name}@{report.chosen.version}`" in text
    assert "**Cut:**" in text and "**Wall time:**" in text and "Failures to review" in text
    assert f"/runs/{state.runs['optimize']}/artifactPath/report.md" in text
    assert "| failed |" in text and "#/experiments/" in text and "/traces/tr-" in text
    view = json.loads(client.get_experiment(state.experiment_id).tags["mlflow.sharedViewState.acon-review"])
    assert "metrics.`peak_tokens_mean`" in view["selectedColumns"] and "viewStateShareKey=acon-review" in text
    # Params and tags tell the same story: an optimize job runs no single `strategy` on one `run.split`.
    assert not any(k.startswith(("strategy.", "run.")) for k in parent.data.params)
    assert parent.data.tags["split"] == "train" and parent.data.tags["strategy"] == "guideline"
    markdown = (finished.config.out_dir / "report.md").read_text()
    assert f"`{state.runs['optimize']}`" in markdown and "**Cut:**" in markdown
    pairs = [m.value for m in client.get_metric_history(parent.info.run_id, "pairs_total")]
    assert pairs == sorted(pairs) and pairs[-1] == sum(r.summary.pairs for r in report.rounds)
    assert all(v == round(v) for k, v in parent.data.metrics.items() if "tokens" in k)


def test_a_browser_reaches_the_failing_pair_from_the_parent_run_by_links_only(finished, tmp_path):
    from optimizer.testing.browser import find_chromium
    from optimizer.testing.ui_walk import walk

    if find_chromium() is None:
        pytest.skip("headless Chromium is not installed (Debian: apt-get install chromium)")
    out = Path(os.environ.get("ACON_UI_SCREENSHOTS", tmp_path))
    pages = walk(finished.config.out_dir, out)
    assert [p.name for p in pages] == ["parent run", "pair diff", "compressed trace", "full trace"]
    for page in pages:
        assert Path(page.screenshot).read_bytes().startswith(b"\x89PNG")
    assert "/artifactPath/" in pages[1].url and "/traces/tr-" in pages[2].url and "/traces/tr-" in pages[3].url


def test_evaluation_runs_last_as_long_as_their_episodes(finished):
    config, client, state = finished.config, finished.client, finished.state
    for key, run in runs_by_key(client, state).items():
        if not key.startswith("eval/"):
            continue
        episodes = episodes_in(config.out_dir / "runs" / key.removeprefix("eval/"))
        took = (run.info.end_time - run.info.start_time) / 1000
        assert took == pytest.approx(sum(e.wall_s for e in episodes), abs=0.01), key
        if run.data.tags["agent"] == "reference":
            assert "agent_tokens" not in run.data.metrics  # not measured at tier 0, so not a flat 0


def test_a_seed_rejected_after_its_subset_screen_does_not_break_the_report(tmp_path, migrated_db):
    # The seed compresses, so it is screened on a one-task subset first; with a one-call compressor budget
    # it is rejected there and never registered. The report's tagging of rejected candidates once raised
    # KeyError on it, after report.md was written, and the job exited with a traceback.
    with StubServer(scripted_models) as url:
        config = job_config(tmp_path, url).with_overrides(
            optimize={"budget": {"rounds": 1, "llm_screen_limit": 1, "max_compressor_calls": 1}}
        )
        job, report, client = run_tracked(config, migrated_db)
    seed = job.state.candidates[job.state.seed]
    assert seed.rejected.startswith("compressor budget spent") and list(seed.screens) == ["subset"]
    chosen = client.get_prompt_version_by_alias("acon-scripted-history", "best")
    assert chosen.tags["acon.version"] == report.chosen.version


def test_reviewed_traces_are_the_test_rows_and_the_mined_pairs(reviewed):
    """The default: a job's tier-0 screens are not traced (most of a long job's time went to exporting them),
    the test rows are, and so is each side of every pair a round mined, tagged with the pair."""
    config, client, state = reviewed.config, reviewed.client, reviewed.state
    runs = runs_by_key(client, state)
    episodes = traced = 0
    for key, run in runs.items():
        if not key.startswith("eval/"):
            continue
        ran = episodes_in(config.out_dir / "runs" / key.removeprefix("eval/"))
        found = client.search_traces(locations=[state.experiment_id], run_id=run.info.run_id)
        if run.data.tags["split"] == "test":
            assert sorted(t.info.tags["acon.task"] for t in found) == sorted(e.task_id for e in ran), key
        else:  # a screen's episode is traced only as one side of a pair
            assert all("acon.pair.role" in t.info.tags for t in found), key
        episodes, traced = episodes + len(ran), traced + len(found)
    pairs = [t for t in _traces(client, state.experiment_id) if t.info.tags.get("acon.pair.role") == "compressed"]
    mined = sum(r.summary.pairs for r in reviewed.report.rounds)
    # The rounds' pairs, traced when mined, beside the test rows' failures, traced with their runs.
    assert mined > 0 and sum(t.info.tags["acon.split"] == "train" for t in pairs) >= mined
    for trace in pairs:
        assert trace.info.tags["acon.split"] in ("train", "test") and trace.info.tags["acon.tier"] == "0"
        other = client.get_trace(trace.info.tags["acon.pair.other_trace"]).info
        assert other.tags["acon.pair.role"] == "full" and other.tags["acon.task"] == trace.info.tags["acon.task"]
    assert traced + 2 * len(pairs) < episodes  # what the mode is for
