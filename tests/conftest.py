from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType

import pytest

from optimizer.config import ExperimentConfig, load_experiment
from optimizer.testing.scripted import scripted_models
from optimizer.testing.stub_server import StubServer

ROOT = Path(__file__).resolve().parents[1]


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


def job_config(tmp: Path, url: str, **optimize) -> ExperimentConfig:
    """A small tier-0 optimize job on the builtin suite, every role on the scripted server at `url`."""
    endpoint = f'base_url = "{url}"\nmodel = "scripted"\nbackoff_s = 0.0\n'
    settings = {
        "rounds": 2,
        "train_limit": 6,
        "test_limit": 4,
        "confirm_top": 0,
        "final_strategies": ["none", "fifo", "oracle"],
        **optimize,
    }
    lines = [f"{k} = {v!r}".replace("'", '"') for k, v in settings.items()]
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
            "[optimize]",
            *lines,
            "[endpoints.agent]",
            endpoint,
            "[endpoints.compressor]",
            endpoint,
            "[endpoints.optimizer]",
            endpoint,
        ]
    )
    path = tmp / "job.toml"
    path.write_text(text.replace("True", "true").replace("False", "false"))
    return load_experiment(path)
