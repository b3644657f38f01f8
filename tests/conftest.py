from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from optimizer.config import ExperimentConfig, load_experiment, merged_tables
from optimizer.testing.scripted import scripted_models
from optimizer.testing.stub_server import StubServer

ROOT = Path(__file__).resolve().parents[1]


def env_without_mlflow() -> dict[str, str]:
    """This process's environment without MLflow's variables, as a user's shell would have it: MLflow writes
    MLFLOW_TRACKING_URI into the environment when a test sets its URI in process, and a job started in a
    subprocess would log into that test's store."""
    return {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}


def benchmark_module(name: str) -> Iterator[ModuleType]:
    """`benchmarks/<name>.py` imported as a module for one test module (`benchmarks/` is no package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(name, None)


@pytest.fixture
def stub() -> Callable[..., StubServer]:
    """Start scripted OpenAI-compatible servers; all are stopped at the end of the test."""
    started: list[StubServer] = []

    def make(responder=None, **kwargs) -> StubServer:
        server = StubServer(responder, **kwargs)
        server.__enter__()
        started.append(server)
        return server

    yield make
    for server in started:
        server.__exit__(None, None, None)


def scripted(replies: Sequence[str]) -> Callable[[dict], str]:
    """A responder that returns `replies` in order, then repeats the last one."""
    state = {"i": 0}

    def respond(request: dict) -> str:
        i = min(state["i"], len(replies) - 1)
        state["i"] += 1
        return replies[i]

    return respond


@pytest.fixture
def run_cli(monkeypatch, capsys):
    """Run `acon ...` in-process; returns (exit code, stdout, stderr)."""
    from optimizer import cli

    def run(*args: str) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["acon", *args])
        code = 0
        try:
            cli.main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


@pytest.fixture(scope="module")
def scripted_url():
    with StubServer(scripted_models) as url:
        yield url


merged = merged_tables  # the tests' name for the config's own table merge


def optimize_toml(settings: dict[str, Any]) -> list[str]:
    """`[optimize]` and its sections (`budget={"rounds": 1}` is `[optimize.budget] rounds = 1`) as TOML lines."""
    lines = ["[optimize]", *(f"{k} = {json.dumps(v)}" for k, v in settings.items() if not isinstance(v, dict))]
    for section, values in settings.items():
        if isinstance(values, dict):
            lines += [f"[optimize.{section}]", *(f"{k} = {json.dumps(v)}" for k, v in values.items())]
    return lines


def job_config(tmp: Path, url: str, **optimize: Any) -> ExperimentConfig:
    """A small tier-0 optimize job on the builtin suite, every role on the scripted server at `url`; `optimize`:
    keys of `[optimize]`, and its sections as tables (`acon={"llm_proposers": False}`)."""
    endpoint = f'base_url = "{url}"\nmodel = "scripted"\nbackoff_s = 0.0\n'
    settings = merged(
        {
            "train_limit": 6,
            "test_limit": 4,
            "budget": {"rounds": 2},
            "selection": {"confirm_top": 0},
            "report": {"final_strategies": ["none", "fifo", "oracle"]},
        },
        optimize,
    )
    text = "\n".join(
        [
            'name = "scripted-job"',
            f'out = "{tmp / "job"}"',
            "[suite]",
            'type = "builtin"',
            "[run]",
            'agent = "reference"',
            "[tracking]",
            "enabled = false",
            *optimize_toml(settings),
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
