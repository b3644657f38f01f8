"""`acon` starts without the heavy libraries, and keeps their log lines out of its output unless `-v`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT, env_without_mlflow

# Each takes from a tenth of a second (numpy) to most of one (openai, dspy) to import on 2 cores.
HEAVY = ("openai", "dspy", "mlflow", "numpy", "datasets", "litellm", "langchain_core", "ray")

LOADED = """
import json, sys
{setup}
from optimizer import cli
sys.argv = ["acon", *sys.argv[1:]]
try:
    cli.main()
except SystemExit:
    pass
print(json.dumps(sorted(name for name in {heavy!r} if name in sys.modules)), file=sys.stderr)
"""


def _loaded(*args: str, setup: str = "") -> list[str]:
    code = LOADED.format(heavy=HEAVY, setup=setup)
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, check=True)
    return json.loads(done.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "args", [("--help",), ("run", "--help"), ("compare", "--help"), ("canary", "--help"), ("models", "status")]
)
def test_help_and_light_commands_import_no_heavy_library(args):
    assert _loaded(*args) == []


def test_the_probe_sees_a_heavy_import_when_one_happens():
    """Without this, the empty lists above could mean the probe never looked."""
    assert _loaded("--help", setup="import optimizer.adapters.openai_sdk") == ["openai"]


def _acon(tmp_path, *args: str) -> subprocess.CompletedProcess[str]:
    # MLflow's variables as a user would have them: none. In-process CLI tests before this one leave theirs
    # in this process (mlflow.set_tracking_uri sets MLFLOW_TRACKING_URI), which would send the run's tracking
    # to another test's store.
    env = env_without_mlflow()
    env["PYTHONPATH"] = str(ROOT)
    command = [sys.executable, "-m", "optimizer", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)


def test_mlflow_lines_show_only_with_verbose(tmp_path):
    smoke = str(ROOT / "experiments" / "smoke.toml")
    run = ("run", smoke, "--agent", "reference", "--limit", "1")
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir(), second.mkdir()
    quiet = _acon(first, *run)  # a new store: MLflow announces its tables, then flushes the trace queue
    assert quiet.returncode == 0, quiet.stderr
    assert list(first.glob("runs/smoke/**/mlflow.db")), "the run was not tracked: nothing to be quiet about"
    assert "INFO" not in quiet.stderr, quiet.stderr
    loud = _acon(second, "-v", *run)
    assert loud.returncode == 0, loud.stderr
    assert " INFO mlflow" in loud.stderr, loud.stderr
    rerun = _acon(second, *run)  # reads the stored run back: MLflow's artifact progress bars
    assert rerun.returncode == 0, rerun.stderr
    assert "INFO" not in rerun.stderr and "Downloading artifacts" not in rerun.stderr, rerun.stderr
