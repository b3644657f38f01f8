"""Which tasks a tier-1 confirmation of summary instructions runs on: those full context solves on every seed."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

from optimizer.evaluate.scores import TaskScore
from optimizer.search.summary_job import solved_at_tier1
from tests.context.conftest import make_task

TASKS = [dataclasses.replace(make_task(), id=f"t{i}") for i in range(6)]


class FullContextAgent:
    """A stand-in evaluator: `fails` holds (task id, seed) episodes the agent loses with full context."""

    def __init__(self, fails: set[tuple[str, int]]) -> None:
        self.fails = fails
        self.calls: list[tuple[list[str], int]] = []

    def evaluate(self, strategy, tasks, split, agent, *, seed=None, temperature=0.3):
        assert strategy.label() == "none" and agent == "llm" and seed is not None
        self.calls.append(([t.id for t in tasks], seed))
        scores = tuple(TaskScore(t.id, (t.id, seed) not in self.fails, 100) for t in tasks)
        return SimpleNamespace(scores=SimpleNamespace(tasks=scores))


def test_a_task_full_context_fails_on_any_seed_is_left_out_and_the_search_stops_when_it_has_enough():
    agent = FullContextAgent({("t0", 2), ("t2", 1)})
    solved = solved_at_tier1(agent, TASKS, "train", 2, 0.3, want=2)
    assert [t.id for t in solved] == ["t1", "t3"]
    # Two tasks a batch, each on both seeds; after the second batch the search has its two and stops.
    assert agent.calls == [(["t0", "t1"], 1), (["t0", "t1"], 2), (["t2", "t3"], 1), (["t2", "t3"], 2)]


def test_without_a_limit_every_solved_task_is_kept_and_none_when_full_context_solves_nothing():
    assert [t.id for t in solved_at_tier1(FullContextAgent({("t4", 1)}), TASKS, "val", 1, 0.3)] == [
        "t0",
        "t1",
        "t2",
        "t3",
        "t5",
    ]
    everything_fails = {(t.id, 1) for t in TASKS}
    assert solved_at_tier1(FullContextAgent(everything_fails), TASKS, "val", 1, 0.3, want=3) == []
