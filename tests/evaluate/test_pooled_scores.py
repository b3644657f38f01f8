"""Runs of one strategy on several sampling seeds, pooled: per-task figures average a task's seeds, and a paired
comparison counts each task once."""

from __future__ import annotations

import pytest

from optimizer.evaluate.scores import Scores, TaskScore
from optimizer.search.report import paired


def run(*tasks: tuple[str, bool, int], directory: str = "") -> Scores:
    return Scores(tuple(TaskScore(t, ok, peak) for t, ok, peak in tasks), compressor_tokens=10, directory=directory)


def test_pooled_runs_keep_every_episode_and_average_per_task():
    seed1 = run(("a", True, 1000), ("b", False, 3000), directory="r1")
    seed2 = run(("a", False, 2000), ("b", False, 5000), directory="r2")
    pooled = Scores.pooled([seed1, seed2])
    assert (pooled.n, pooled.distinct_tasks, pooled.success) == (4, 2, 0.25)
    assert pooled.success_by_task() == {"a": 0.5, "b": 0.0}
    assert pooled.peak_by_task() == {"a": 1500.0, "b": 4000.0}
    assert pooled.compressor_tokens == 20 and pooled.directory == "r1; r2"
    assert (pooled.headline()["tasks"], pooled.headline()["episodes"]) == (2, 4)
    assert Scores.pooled([seed1]) is seed1  # one seed: the run as it is


def test_paired_counts_a_task_once_by_its_mean_over_seeds():
    learned = Scores.pooled([run(("a", True, 1000), ("b", True, 1000)), run(("a", True, 1000), ("b", False, 3000))])
    other = Scores.pooled([run(("a", False, 2000), ("b", True, 2000)), run(("a", True, 2000), ("b", True, 2000))])
    p = paired(learned, other)
    assert p.tasks == 2
    assert p.success_diff == pytest.approx(((1 - 0.5) + (0.5 - 1)) / 2)
    assert p.peak_diff == pytest.approx(((1000 - 2000) + (2000 - 2000)) / 2)
    # With one episode per task it is the plain per-task difference, as before pooling existed.
    single = paired(run(("a", True, 1000)), run(("a", False, 1500)))
    assert (single.tasks, single.success_diff, single.peak_diff) == (1, 1.0, -500.0)


def test_both_solved_pairs_the_same_task_on_the_same_seed():
    from optimizer.search.report import both_solved

    chosen = Scores.pooled([run(("a", True, 1000)), run(("a", False, 1200))])
    other = Scores.pooled([run(("a", True, 3000)), run(("a", True, 5000))])
    # Only seed 1 was solved by both: its peaks, not seed 2's 5,000 against seed 1's 1,000.
    both = both_solved(chosen, other)
    assert (both.tasks, both.chosen_peak_mean, both.peak_mean) == (1, 1000, 3000)
