"""The calibration benchmark on a hand-made job: tier-1 verdicts as files, tier 0 run for real on `reach`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from optimizer.config import load_experiment
from tests.conftest import ROOT, benchmark_module

OFFLOAD = {"type": "offload_preview", "max_tokens": 250, "head_tokens": 60, "tail_tokens": 30}


@pytest.fixture(scope="module")
def bench():
    yield from benchmark_module("bench_calibration")


def write_run(job: Path, name: str, strategy: str, config: dict, split: str, seed: int, verdicts: dict) -> None:
    run = job / "runs" / name
    run.mkdir(parents=True)
    meta = {"strategy": strategy, "strategy_config": config, "split": split, "agent": "llm"}
    meta["endpoints"] = {"agent": {"model": "m", "seed": str(seed), "temperature": "0.3"}}
    (run / "meta.json").write_text(json.dumps(meta))
    lines = [json.dumps({"task_id": t, "outcome": "success" if ok else "failure"}) for t, ok in verdicts.items()]
    (run / "episodes.jsonl").write_text("\n".join(lines) + "\n")


@pytest.fixture
def job(tmp_path: Path) -> Path:
    """An agent that never recalls: it fails wherever offloading hides what a task needs."""
    config = load_experiment(ROOT / "experiments" / "reach.toml")
    (tmp_path / "job.json").write_text(json.dumps({"config": config.model_dump(mode="json")}))
    splits = {"train": ["reach-price-compare", "reach-orders"], "val": ["reach-price", "reach-gift"]}
    # on `reach`, tier 0 needs a recall for reach-price-compare and reach-price under this offload
    fails = {"reach-price-compare", "reach-price"}
    for split, tasks in splits.items():
        for seed in (1, 2):
            write_run(
                tmp_path, f"none-llm-{split}-{seed}", "none", {"type": "none"}, split, seed, dict.fromkeys(tasks, True)
            )
            verdicts = {t: t not in fails for t in tasks}
            write_run(tmp_path, f"offload-llm-{split}-{seed}", "offload", OFFLOAD, split, seed, verdicts)
    write_run(tmp_path, "none-llm-test-1", "none", {"type": "none"}, "test", 1, {"reach-reserve": False})
    return tmp_path


def test_the_fit_on_train_cells_removes_the_false_passes_on_held_out_ones(bench, job, tmp_path):
    out = tmp_path / "calibration.json"
    assert bench.main([str(job), "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["p_hat"] == 0.0
    assert report["tier1_cells"] == {"train": 8, "val": 8}  # the test split's run is never read
    default, calibrated, jointly = report["rows"].values()
    assert default["held_out"]["false_pass"] == 2 and default["held_out"]["false_pass_of"] == 4
    assert default["held_out"]["agreement"] == pytest.approx(6 / 8)
    assert calibrated["held_out"]["false_pass"] == 0 and calibrated["held_out"]["agreement"] == 1.0
    # Here recalls alone explain the agent: the joint fit keeps u at 1 and agrees with the recall-only fit.
    assert report["agent_model"] == {"recall_probability": 0.0, "use_probability": 1.0}
    assert jointly["held_out"] == calibrated["held_out"]
    assert report["brier_held_out"]["calibrated"] < report["brier_held_out"]["default"]
    offload = report["held_out_by_strategy"]["offload"]
    assert offload["cells"] == 4 and offload["tier0"] == 1.0 and offload["tier1"] == 0.5


def test_the_sealed_split_cannot_be_fitted_or_judged_on(bench, job, capsys):
    assert bench.main([str(job), "--judge-on", "test"]) == 2
    assert "sealed" in capsys.readouterr().err


def test_a_job_without_tier1_runs_is_one_line(bench, tmp_path, capsys):
    config = load_experiment(ROOT / "experiments" / "reach.toml")
    (tmp_path / "job.json").write_text(json.dumps({"config": config.model_dump(mode="json")}))
    assert bench.main([str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no tier-1 runs" in err[0]
