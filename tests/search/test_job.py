"""The optimization loop on the built-in suite with scripted models (a lossy head-keeping compressor)."""

from __future__ import annotations

import json

import pytest

from optimizer.errors import ConfigError
from optimizer.search.job import OptimizationJob
from tests.conftest import job_config


@pytest.fixture(scope="module")
def finished(tmp_path_factory, scripted_url):
    tmp = tmp_path_factory.mktemp("job")
    config = job_config(tmp, scripted_url)
    report = OptimizationJob(config, log=lambda m: None).run()
    return config, report


def test_report_has_the_documented_shape(finished):
    config, report = finished
    assert {"chosen", "baselines", "rounds", "budget", "acceptance"} <= set(report)
    assert {"guideline", "success", "success_ci", "peak_tokens_mean", "peak_tokens_max", "total_tokens"} <= set(
        report["chosen"]
    )
    names = {b["strategy"] for b in report["baselines"]}
    assert {"none", "seed", "fifo"} <= names
    assert {"agent_episodes", "compressor_calls", "optimizer_tokens"} == set(report["budget"])
    on_disk = json.loads((config.out_dir / "report.json").read_text())
    assert on_disk["chosen"]["guideline"] == report["chosen"]["guideline"]
    assert (config.out_dir / "report.md").read_text().startswith("# acon optimize")


def test_lossy_compression_is_mined_into_pairs_and_diffs(finished):
    config, report = finished
    first = report["rounds"][0]
    assert first["pairs"] > 0
    diffs = json.loads((config.out_dir / "rounds" / "01" / "diffs.json").read_text())
    facts = [f for d in diffs for f in d["missing"]]
    assert facts and all(f["checkpoint"] in (2, 3, 4, 5, None) for f in facts)
    assert any(f["record"] and f["record"]["action"] in ("compress", "summarize") for f in facts)


def test_deterministic_patch_is_proposed_and_screened(finished):
    config, _ = finished
    state = json.loads((config.out_dir / "state.json").read_text())
    patches = [c for c in state["candidates"].values() if c["origin"] == "patch"]
    assert patches and patches[0]["screen"] is not None
    assert "checkpoint" in patches[0]["rationale"]


def test_chosen_is_no_worse_than_the_seed_on_the_train_objective(finished):
    config, _ = finished
    state = json.loads((config.out_dir / "state.json").read_text())
    seed = state["candidates"][state["seed"]]["screen"]
    chosen = state["candidates"][state["current"]]["screen"]
    assert (chosen["success"], -chosen["peak_tokens_mean"]) >= (seed["success"], -seed["peak_tokens_mean"]) or \
        chosen["success"] > seed["success"]


def test_rerunning_a_finished_job_needs_resume(tmp_path, scripted_url, finished):
    config, _ = finished
    with pytest.raises(ConfigError, match="--resume"):
        OptimizationJob(config, log=lambda m: None)


def test_resume_on_a_different_config_is_refused(finished, tmp_path, scripted_url):
    config, _ = finished
    other = config.model_copy(update={"seed": 99})
    with pytest.raises(ConfigError, match="different config"):
        OptimizationJob(other, resume=True, log=lambda m: None)


def test_resuming_a_finished_job_redoes_nothing(finished):
    config, report = finished
    logs = sorted(config.out_dir.glob("runs/*/episodes.jsonl"))
    before = {p: p.read_text() for p in logs}
    again = OptimizationJob(config, resume=True, log=lambda m: None).run()
    assert {p: p.read_text() for p in logs} == before
    assert again["chosen"]["version"] == report["chosen"]["version"]
    assert again["budget"] == report["budget"]


def test_gepa_search_runs_on_the_same_metric_and_budget(tmp_path, scripted_url):
    config = job_config(tmp_path, scripted_url, search="gepa", gepa_metric_calls=12, train_limit=3, test_limit=2)
    report = OptimizationJob(config, log=lambda m: None).run()
    summary = json.loads((config.out_dir / "state.json").read_text())["rounds"][0]
    assert 0 < summary["gepa_metric_calls"] <= 12 + 3  # GEPA may finish its last minibatch past the cap
    assert summary["gepa_candidates"] >= 1
    assert (config.out_dir / "gepa").is_dir()
    assert report["budget"]["optimizer_tokens"] > 0  # GEPA's reflection calls are accounted
