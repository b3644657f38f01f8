"""An interrupted run stops soon: episodes not started are left for the resumed run, the ones in flight are kept."""

from __future__ import annotations

import dataclasses
import time

import pytest

from optimizer.context.strategies import parse_strategy
from optimizer.evaluate.runner import AgentSpec, run_tasks
from optimizer.evaluate.store import EpisodeStore
from tasks.builtin import BuiltinSuite


class Slow:
    """An environment whose every tool call takes a while, as a real API would."""

    def __init__(self, env) -> None:
        self._env = env

    def __getattr__(self, name):
        return getattr(self._env, name)

    def call(self, call, turn):
        time.sleep(0.05)
        return self._env.call(call, turn)


def _slow_tasks(n: int):
    tasks = BuiltinSuite(n_tasks=n, injections="off").load().tasks
    return [dataclasses.replace(t, make_env=lambda t=t: Slow(t.make_env())) for t in tasks]


def _interrupt(episode) -> None:
    raise KeyboardInterrupt


def test_an_interrupted_concurrent_run_does_not_run_the_queued_tasks(tmp_path):
    tasks = _slow_tasks(12)
    with pytest.raises(KeyboardInterrupt):
        run_tasks(
            tasks,
            parse_strategy("none"),
            AgentSpec("reference"),
            endpoints=None,
            directory=tmp_path,
            meta={"key": "k"},
            concurrency=2,
            on_episode=_interrupt,
        )
    stored = EpisodeStore(tmp_path).load()
    assert 1 <= len(stored) <= 3  # the first one and those in flight, not all 12

    resumed = run_tasks(
        tasks,
        parse_strategy("none"),
        AgentSpec("reference"),
        endpoints=None,
        directory=tmp_path,
        meta={"key": "k"},
        concurrency=2,
    )
    assert [e.task_id for e in resumed] == [t.id for t in tasks]
    assert len(EpisodeStore(tmp_path).records()) == 12  # nothing ran twice
