from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from optimizer.testing.stub_server import StubServer

ROOT = Path(__file__).resolve().parents[1]


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
