"""Store resolution, params (never keys), tags, Pareto front and plot, HTML diffs, tables: no MLflow store."""

from __future__ import annotations

from pathlib import Path

from optimizer.config import ExperimentConfig, TrackingConfig
from optimizer.context.prompt_registry import parse_ref, prompt_prefix
from optimizer.tracking import ParetoPoint, experiment_params, experiment_tags, front_labels, resolve_store
from optimizer.tracking.diffs import guideline_diff, side_by_side
from optimizer.tracking.params import flatten, public_url
from optimizer.tracking.pareto import plot_png
from optimizer.tracking.tables import to_columns
from tests.tracking.conftest import make_guideline


def test_default_store_is_sqlite_in_the_job_dir(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    store = resolve_store(TrackingConfig(), tmp_path / "job")
    assert store.uri == f"sqlite:///{tmp_path / 'job' / 'mlflow.db'}"
    assert store.artifact_location == (tmp_path / "job" / "mlartifacts").as_uri()
    assert not store.is_remote


def test_config_uri_then_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://tracking.example:5000")
    remote = resolve_store(TrackingConfig(), tmp_path)
    assert remote.uri == "http://tracking.example:5000" and remote.artifact_root is None and remote.is_remote
    other = tmp_path / "elsewhere" / "store.db"
    configured = resolve_store(TrackingConfig(uri=f"sqlite:///{other}"), tmp_path)
    assert configured.uri == f"sqlite:///{other}"
    assert configured.artifact_root == other.parent / "mlartifacts"


def test_params_name_models_and_endpoints_but_never_keys(monkeypatch):
    monkeypatch.setenv("ACON_TEST_KEY", "sk-very-secret")
    config = ExperimentConfig.model_validate(
        {
            "name": "exp",
            "suite": {"type": "smoke"},
            "endpoints": {
                "agent": {"base_url": "https://user:pw@api.example/v1", "model": "m1", "api_key_env": "ACON_TEST_KEY"}
            },
        }
    )
    params = experiment_params(config)
    assert params["endpoints.agent.model"] == "m1"
    assert params["endpoints.agent.base_url"] == "https://api.example/v1"
    assert (params["seed"], params["optimize.budget.rounds"], params["acceptance.max_blocking"]) == ("0", "3", "0")
    assert "strategy.type" in params and "run.split" in params
    joined = " ".join(f"{k}={v}" for k, v in params.items())
    assert "sk-very-secret" not in joined and "pw@" not in joined and "ACON_TEST_KEY" not in joined
    assert experiment_tags(config) == {
        "suite": "smoke",
        "split": "test",
        "agent": "llm",
        "strategy": "none",
        "tier": "1",
    }
    assert experiment_tags(config, agent="reference", split="train")["tier"] == "0"


def test_flatten_and_public_url():
    assert flatten({"a": {"b": 1, "c": None}, "d": [1, 2], "e": "x" * 7000}) == {
        "a.b": "1",
        "d": "[1, 2]",
        "e": "x" * 6000,
    }
    assert public_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    assert public_url("http://u:p@host:8000/v1") == "http://host:8000/v1"


def test_pareto_front_and_plot():
    points = [
        ParetoPoint("none", 0.9, 6000, baseline=True),
        ParetoPoint("seed", 0.6, 3000),
        ParetoPoint("cand-1", 0.8, 2500),
        ParetoPoint("fifo", 0.4, 2000, baseline=True),
        ParetoPoint("worse", 0.5, 2600),
    ]
    assert front_labels(points) == ["none", "cand-1", "fifo"]
    png = plot_png(points, title="round 1")
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000
    assert plot_png([]).startswith(b"\x89PNG")


def test_html_diffs_show_both_sides():
    old = make_guideline()
    new = make_guideline("Keep every id, error, amount and date verbatim.")
    page = guideline_diff(old, new)
    assert page.lstrip().startswith("<!DOCTYPE html") and old.version in page and new.version in page
    assert "diff_chg" in page or "diff_add" in page
    assert "<table" in side_by_side("a\nb", "a\nc", from_desc="full", to_desc="compressed")


def test_tables_registry_refs_and_prefix():
    assert to_columns([{"a": 1, "b": {"x": 1}}, {"c": True}]) == {
        "a": [1, None],
        "b": ['{"x": 1}', None],
        "c": [None, True],
    }
    assert parse_ref("acon-x-history@best") == ("acon-x-history", None, "best")
    assert parse_ref("prompts:/acon-x-history/3") == ("acon-x-history", "3", None)
    assert prompt_prefix("my exp/1") == "acon-my-exp-1"


def test_bad_registry_refs_are_config_errors():
    import pytest

    from optimizer.errors import ConfigError

    for ref in ("no-version", "name/abc", "@best", "name@"):
        with pytest.raises(ConfigError):
            parse_ref(ref)


def test_disabled_tracking_is_a_noop_without_mlflow(tmp_path):
    """`enabled = false`: no store, no files, and MLflow is never imported."""
    import subprocess
    import sys

    script = f"""
import sys
from pathlib import Path
from optimizer.config import TrackingConfig
from optimizer.tracking import open_tracker, ParetoPoint
from tests.tracking.conftest import make_episode, make_guideline
job = Path({str(tmp_path / "job")!r})
tracker = open_tracker(TrackingConfig(enabled=False), job, "exp")
assert not tracker.enabled
g = make_guideline()
with tracker.job_run("optimize", params={{"a": 1}}, tags={{"suite": "smoke"}}) as run_id:
    assert run_id is None
    with tracker.child_run("round-1") as child:
        assert child is None
        tracker.log_metrics({{"success": 1.0}}, step=1)
        tracker.log_params({{"b": 2}}); tracker.set_tags({{"c": "d"}})
        assert tracker.trace_episode(make_episode()) is None
    tracker.log_guideline(g, 1); tracker.log_guideline_diff(g, g); tracker.log_pair_diff("t", "<p>", "#", 1)
    tracker.log_table([{{"a": 1}}], "t.json"); tracker.log_pareto([ParetoPoint("a", 1, 1)])
    tracker.log_report("# r", {{}}); tracker.log_text("x", "x.txt")
    assert tracker.register_guideline(g) is None and tracker.set_best(g) is None
    tracker.flush()
assert not job.exists(), "nothing is written"
assert "mlflow" not in sys.modules, "mlflow was imported"
"""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
