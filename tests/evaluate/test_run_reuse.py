"""A run over a wider task list borrows the episodes the same run recorded over a narrower one, and nothing else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from optimizer.config import ExperimentConfig
from optimizer.context.strategies import parse_strategy
from optimizer.evaluate import runner
from optimizer.evaluate.reuse import borrow
from optimizer.evaluate.store import EpisodeStore
from optimizer.evaluate.strategy_runs import plan_run, run_strategy, select_tasks


def smoke_config(tmp_path: Path, **run) -> ExperimentConfig:
    return ExperimentConfig.model_validate(
        {
            "name": "reuse",
            "out": str(tmp_path / "job"),
            "suite": {"type": "smoke"},
            "run": {"agent": "reference", "split": "all", **run},
            "tracking": {"enabled": False},
        }
    )


@pytest.fixture
def episodes_run(monkeypatch) -> list[str]:
    """The task of every episode actually run (not read back or borrowed)."""
    ran: list[str] = []
    real = runner.run_episode

    def counted(task, *args, **kwargs):
        ran.append(task.id)
        return real(task, *args, **kwargs)

    monkeypatch.setattr(runner, "run_episode", counted)
    return ran


def test_a_wider_task_list_runs_only_the_new_tasks(tmp_path, episodes_run):
    config = smoke_config(tmp_path)
    tasks = select_tasks(config, "all", None)
    none = parse_strategy("none")
    narrow = run_strategy(config, tasks[:2], none, agent="reference", endpoints=None, split="all")
    assert episodes_run == [t.id for t in tasks[:2]]

    wide = run_strategy(config, tasks, none, agent="reference", endpoints=None, split="all")
    assert wide.directory != narrow.directory  # the task list is still part of the key
    assert episodes_run[2:] == [tasks[2].id]
    assert [e.task_id for e in wide.episodes] == [t.id for t in tasks]
    borrowed = {e.task_id: e for e in wide.episodes}
    for episode in narrow.episodes:
        assert borrowed[episode.task_id].metrics.peak_tokens == episode.metrics.peak_tokens


def test_a_run_with_another_setting_borrows_nothing(tmp_path, episodes_run):
    config = smoke_config(tmp_path)
    tasks = select_tasks(config, "all", None)
    none = parse_strategy("none")
    run_strategy(config, tasks[:2], none, agent="reference", endpoints=None, split="all")
    capped = smoke_config(tmp_path, max_total_steps=1)
    plan = plan_run(capped, tasks, none, agent="reference", split="all")
    assert plan.elsewhere() == ()
    run_strategy(capped, tasks, none, agent="reference", endpoints=None, split="all")
    assert episodes_run == [t.id for t in tasks[:2]] + [t.id for t in tasks]


def test_a_directory_whose_meta_names_another_key_is_not_the_same_run(tmp_path):
    config = smoke_config(tmp_path)
    tasks = select_tasks(config, "all", None)
    none = parse_strategy("none")
    narrow = run_strategy(config, tasks[:2], none, agent="reference", endpoints=None, split="all")
    meta_path = narrow.directory / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["tasks"] = [t.id for t in tasks[:1]]  # its key no longer follows from its task list
    meta_path.write_text(json.dumps(meta))
    assert plan_run(config, tasks, none, agent="reference", split="all").elsewhere() == ()


def test_borrow_skips_outages_and_other_strategy_versions(tmp_path):
    source = EpisodeStore(tmp_path / "source")
    records = [
        {"task_id": "a", "outcome": "success", "strategy_version": "v1"},
        {"task_id": "b", "outcome": "infra_error", "strategy_version": "v1"},
        {"task_id": "c", "outcome": "failure", "strategy_version": "v0"},
        {"task_id": "d", "outcome": "failure", "strategy_version": "v1"},
        {"task_id": "d", "outcome": "success", "strategy_version": "v1"},  # the newest record of a task counts
    ]
    for record in records:
        source.log.append(record)
    target = EpisodeStore(tmp_path / "target")
    assert borrow(target, ["a", "b", "c", "d", "e"], [source.directory], "v1") == ["a", "d"]
    assert [(r["task_id"], r["outcome"]) for r in target.records()] == [("a", "success"), ("d", "success")]
