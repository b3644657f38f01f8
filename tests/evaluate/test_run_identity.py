"""A run's key holds everything that changes its episodes, and a run's strategy is the one it started with."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from optimizer.config import ExperimentConfig
from optimizer.context.guideline import SEED_GUIDELINE, read_guideline, save_guideline
from optimizer.context.policy import RetentionPolicy
from optimizer.context.strategies import GuidelineStrategy, parse_strategy
from optimizer.errors import AconError
from optimizer.evaluate.runner import AgentSpec, run_tasks
from optimizer.evaluate.strategy_runs import plan_run, run_strategy, select_tasks


def smoke_config(tmp_path: Path, run: dict | None = None, **sections) -> ExperimentConfig:
    return ExperimentConfig.model_validate(
        {
            "name": "identity",
            "out": str(tmp_path / "job"),
            "suite": {"type": "smoke"},
            "run": {"agent": "reference", "split": "all", **(run or {})},
            "tracking": {"enabled": False},
            **sections,
        }
    )


def test_a_step_cap_is_part_of_the_run_key(tmp_path):
    uncapped = smoke_config(tmp_path)
    tasks = select_tasks(uncapped, "all", None)
    none = parse_strategy("none")
    full = run_strategy(uncapped, tasks, none, agent="reference", endpoints=None, split="all")
    assert max(e.metrics.steps for e in full.episodes) > 1
    capped = uncapped.model_copy(update={"run": uncapped.run.model_copy(update={"max_total_steps": 1})})
    result = run_strategy(capped, tasks, none, agent="reference", endpoints=None, split="all")
    # The capped run neither reads back the uncapped episodes nor lands in their directory.
    assert result.directory != full.directory
    assert all(e.metrics.steps <= 1 for e in result.episodes)
    # The default cap adds nothing to the key: runs stored before it was keyed are found again.
    explicit = smoke_config(tmp_path, {"max_total_steps": 200})
    assert plan_run(explicit, tasks, none, agent="reference", split="all").key == (
        plan_run(uncapped, tasks, none, agent="reference", split="all").key
    )


@pytest.mark.parametrize(
    ("role", "setting", "strategy"),
    [
        ("agent", {"max_tokens": 64}, "none"),
        ("agent", {"structured_output": "json_object"}, "none"),
        ("agent", {"native_tools": True}, "none"),
        ("compressor", {"context_tokens": 4096}, "llm_observation"),
    ],
)
def test_endpoint_settings_that_change_a_reply_are_part_of_the_run_key(tmp_path, role, setting, strategy):
    base = smoke_config(tmp_path, {"agent": "llm"})
    changed = smoke_config(tmp_path, {"agent": "llm"}, endpoints={role: setting})
    tasks = select_tasks(base, "all", None)
    keys = [plan_run(c, tasks, parse_strategy(strategy), agent="llm", split="all").key for c in (base, changed)]
    assert keys[0] != keys[1]


def guideline_file(tmp_path: Path, over: int) -> Path:
    seed = read_guideline(SEED_GUIDELINE)
    policy = RetentionPolicy.model_validate({"write": [{"move": "offload", "over": over}]})
    path = tmp_path / "g.md"
    save_guideline(seed.model_copy(update={"policy": policy, "name": "edited"}), path)
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000 * over))  # a new mtime each write
    return path


def test_a_guideline_edited_during_a_run_does_not_change_the_run(tmp_path):
    path = guideline_file(tmp_path, 40)
    config = smoke_config(tmp_path)
    tasks = select_tasks(config, "all", None)
    strategy = GuidelineStrategy(guideline=str(path))
    version = strategy.version()

    def edit(episode) -> None:
        guideline_file(tmp_path, 30)  # the user edits the file while the run goes on

    result = run_strategy(config, tasks, strategy, agent="reference", endpoints=None, split="all", on_episode=edit)
    assert len(tasks) > 1 and {e.strategy_version for e in result.episodes} == {version}
    assert version in result.strategy.label()


def test_an_episode_of_another_strategy_version_is_never_stored(tmp_path):
    path = guideline_file(tmp_path, 40)
    config = smoke_config(tmp_path)
    tasks = select_tasks(config, "all", None)
    strategy = GuidelineStrategy(guideline=str(path))
    plan = plan_run(config, tasks, strategy, agent="reference", split="all")
    guideline_file(tmp_path, 30)  # changed between planning the run and running it
    with pytest.raises(AconError, match=f"{plan.meta['strategy_version']}.*changed") as info:
        run_tasks(tasks, strategy, AgentSpec("reference"), endpoints=None, directory=plan.directory, meta=plan.meta)
    assert "\n" not in str(info.value)
    assert not (plan.directory / "episodes.jsonl").exists() or not (plan.directory / "episodes.jsonl").read_text()


@pytest.mark.parametrize("kind", ["guideline", "llm_history", "llm_observation"])
def test_a_fixed_strategy_keeps_the_guideline_it_read(tmp_path, kind):
    # Every strategy that reads a guideline file (its policy and texts, or only its texts).
    path = guideline_file(tmp_path, 40)
    strategy = parse_strategy({"type": kind, "guideline": str(path)})
    fixed = strategy.fixed()
    before = (fixed.version(), fixed.texts().version, fixed.label())
    seed = read_guideline(path)
    edited = seed.model_copy(update={"history": "Edited.", "observation": "Edited too."})
    save_guideline(edited, path)
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**12))
    assert strategy.version() != before[0]  # unfixed, it follows the file
    assert (fixed.version(), fixed.texts().version, fixed.label()) == before


def test_a_strategy_that_offers_recall_is_keyed_by_how_the_tool_is_listed(tmp_path, monkeypatch):
    import optimizer.evaluate.strategy_runs as strategy_runs

    config = smoke_config(tmp_path, {"agent": "llm"})
    tasks = select_tasks(config, "all", None)
    offering, none = parse_strategy("offload_preview"), parse_strategy("none")
    assert offering.offers_recall and not none.offers_recall
    listed_lazily = [plan_run(config, tasks, s, agent="llm", split="all").key for s in (offering, none)]
    monkeypatch.setattr(strategy_runs, "_recall_listing", lambda strategy: [])
    keyed_before = [plan_run(config, tasks, s, agent="llm", split="all").key for s in (offering, none)]
    # Episodes recorded when `recall` was listed from the first request are not read back as today's ...
    assert listed_lazily[0] != keyed_before[0]
    # ... while a strategy that never offers it records the same episodes, and finds its stored ones again.
    assert listed_lazily[1] == keyed_before[1]
