"""The `oracle` is a floor: it keeps each needed part only until its last use, and no strategy that the
reference agent succeeds under sends a smaller peak than it on any task of the suites that run offline.

The floor test runs every built-in fixed strategy and every shipped learned guideline that makes no
compressor call, task by task, on smoke, reach, planted, a share of the built-in suite and (with bfcl-eval
installed) the first tasks of BFCL's base and long_context categories, both splits: a floor that held on
train only would still be a wrong floor in the test-split report. A task some strategy solves must be
solved by the oracle at a peak no higher.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from optimizer.agent.kinds import ReferenceAgentConfig
from optimizer.agent.loop import EpisodeServices, run_episode
from optimizer.context.guideline import read_guideline
from optimizer.context.strategies import DETERMINISTIC, GuidelineStrategy, parse_strategy
from optimizer.context.strategies.base import ContextStrategy
from optimizer.world import Need, NeedKind
from optimizer.world.task import Task
from tests.context.conftest import STANDARD, Scripted, assert_contract, ok, run

LEARNED = Path(__file__).resolve().parents[2] / "guidelines" / "learned"


def test_the_oracle_drops_a_step_once_no_later_step_needs_it():
    """The catalogue's bin is kept until the stock read that needs it, then the whole step goes."""
    need = Need(NeedKind.VALUE, "B-14", argument="bin", guess="B-15")
    script = (
        *STANDARD[:2],
        Scripted("get_stock", {"sku": "W-778", "bin": "B-14"}, ok("sku: W-778"), (need,)),
        Scripted("fetch_page", {"url": "https://example.com/widgets"}, ok("<h1>Widgets</h1>")),
    )
    result = run(parse_strategy("oracle"), script)
    assert result.episode.outcome == "success" and not result.episode.deviations
    steps = result.episode.steps
    # Step 2 takes the stock read: the bin must be in view there, and is gone from the next request on,
    # with the catalogue's call (a call is never shown without its result).
    assert "B-14" in "\n".join(result.episode.checkpoint_texts(5, 2))
    later = "\n".join(result.episode.checkpoint_texts(5, 3))
    assert "read_file" not in later and "docs/catalog.md" not in later  # the read and its result
    assert result.visible_at_end("RULE-MID-02")  # pinned: whole, to the end
    # A step no later step needs from goes as soon as its result is in: the page read, before the answer.
    final = "\n".join(result.episode.checkpoint_texts(5, len(steps) - 1))
    assert "fetch_page" not in final and "example.com" not in final
    assert_contract(result)


def test_the_oracle_keeps_a_literal_alone_whatever_it_spans():
    """A need printed as key and value (`"units_in_stock": 3`) or across two fields stays visible: the
    literal itself is kept, however the result is laid out, with the result's must-keep lines."""
    from optimizer.context.history import Entry, EntryKind
    from optimizer.context.strategies.oracle import kept_content

    content = '{"sku": "SKU-1", "units_in_stock": 3, "note": "showing 1 of 2"}'
    raw = Entry(2, EntryKind.RESULT, content, 0, 0, must_keep=("showing 1 of 2",))
    assert kept_content(raw, content, ['"units_in_stock": 3']) == '"units_in_stock": 3\nshowing 1 of 2'
    assert kept_content(raw, content, ['"SKU-1", "units_in_stock"']) == '"SKU-1", "units_in_stock"\nshowing 1 of 2'
    assert kept_content(raw, content, ["SKU-2"]) == "showing 1 of 2"  # not in it: nothing of it kept


# --- the floor, suite by suite ----------------------------------------------------------------------


def floor_strategies() -> dict[str, ContextStrategy]:
    """The fixed baselines and the shipped learned guidelines that run without a compressor."""
    strategies: dict[str, ContextStrategy] = {name: parse_strategy(name) for name in DETERMINISTIC}
    for path in sorted(LEARNED.glob("*.md")):
        learned = GuidelineStrategy(guideline=read_guideline(path))
        if not learned.uses_compressor:
            strategies[f"learned {path.stem}"] = learned
    return strategies


def _smoke() -> Sequence[Task]:
    from tasks.smoke import SmokeSuite

    return SmokeSuite().load().tasks


def _reach() -> Sequence[Task]:
    from tasks.reach import ReachSuite

    return ReachSuite().load().tasks


def _planted() -> Sequence[Task]:
    from tasks.planted import PlantedSuite

    return PlantedSuite().load().tasks


def _builtin() -> Sequence[Task]:
    from tasks.builtin import BuiltinSuite

    return BuiltinSuite(n_tasks=28).load().tasks  # four of each family


def _bfcl(category: str, limit: int) -> Callable[[], Sequence[Task]]:
    def load() -> Sequence[Task]:
        from tasks.bfcl import BfclSuite, install

        if not install.ready():
            pytest.skip("bfcl-eval not installed (acon setup)")
        return BfclSuite(category=category, limit=limit).load().tasks

    return load


SUITES: dict[str, Callable[[], Sequence[Task]]] = {
    "smoke": _smoke,
    "reach": _reach,
    "planted": _planted,
    "builtin": _builtin,
    "bfcl_base": _bfcl("multi_turn_base", 30),
    "bfcl_long_context": _bfcl("multi_turn_long_context", 12),
}


def test_the_floor_covers_every_fixed_baseline_and_a_learned_guideline():
    names = set(floor_strategies())
    assert {"none", "fifo", "mask_last_n", "clear_tool_uses", "offload_preview"} <= names
    assert any(name.startswith("learned ") for name in names)


@pytest.mark.parametrize("suite", list(SUITES))
def test_no_strategy_succeeds_below_the_oracle(suite: str):
    agent = ReferenceAgentConfig()
    oracle = parse_strategy("oracle")
    strategies = floor_strategies()
    below: list[str] = []
    compared = 0
    for task in SUITES[suite]():
        floor = run_episode(task, agent.build(task, None), oracle, EpisodeServices())
        for name, strategy in strategies.items():
            episode = run_episode(task, agent.build(task, None), strategy, EpisodeServices())
            if episode.outcome != "success":
                continue
            compared += 1
            if floor.outcome != "success":
                below.append(f"{task.id}: {name} succeeds, the oracle does not ({floor.reasons[:1]})")
            elif episode.metrics.peak_tokens < floor.metrics.peak_tokens:
                below.append(
                    f"{task.id}: {name} peaks at {episode.metrics.peak_tokens}, "
                    f"the oracle at {floor.metrics.peak_tokens}"
                )
    assert compared > 0
    assert below == []
