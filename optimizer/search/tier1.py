"""Tier 1 in the loop: the real agent's repeats, their majority verdicts, and pairs mined from them.

One tier-1 episode is one draw of a sampling agent: the 1.5B local model fails a task it usually solves
often enough that a single failure under compression says little. Repeats give each task a pass count;
a pair is a task full context passes on most seeds and the candidate fails on most seeds, so that what is
mined is compression's doing and not the agent's own variance.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from optimizer.agent.episode import Episode
from optimizer.evaluate.scores import Scores, TaskScore
from optimizer.mining.causes import AGENT_VARIANCE, behavioural_cause
from optimizer.mining.pair_diff import diff_pair
from optimizer.search.evaluator import Evaluation
from optimizer.search.proposers.base import Pair
from optimizer.world.task import Task


@dataclass(frozen=True)
class Repeats:
    """The same strategy on the same tasks, one evaluation per sampling seed."""

    evaluations: tuple[Evaluation, ...]

    def episodes(self, task_id: str) -> list[Episode]:
        out = []
        for evaluation in self.evaluations:
            episode = evaluation.episodes.get(task_id)
            if episode is not None and episode.outcome != "infra_error":
                out.append(episode)
        return out

    def task_ids(self) -> list[str]:
        return list(dict.fromkeys(t.task_id for e in self.evaluations for t in e.scores.tasks))

    def passes(self) -> dict[str, tuple[int, int]]:
        """Per task: (episodes that passed, episodes run), infrastructure errors left out."""
        out: dict[str, tuple[int, int]] = {}
        for evaluation in self.evaluations:
            for t in evaluation.scores.tasks:
                won, ran = out.get(t.task_id, (0, 0))
                out[t.task_id] = (won + t.success, ran + 1)
        return out

    def pass_rate(self) -> float:
        counts = self.passes().values()
        ran = sum(n for _, n in counts)
        return sum(k for k, _ in counts) / ran if ran else 0.0

    def scores(self) -> Scores:
        """One score per task, pairable with any other: passed on most seeds, mean peak over the seeds."""
        by_task: dict[str, list[TaskScore]] = {}
        for evaluation in self.evaluations:
            for t in evaluation.scores.tasks:
                by_task.setdefault(t.task_id, []).append(t)
        tasks = tuple(
            TaskScore(
                task_id,
                2 * sum(t.success for t in runs) > len(runs),
                round(sum(t.peak_tokens for t in runs) / len(runs)),
                sum(t.recalls for t in runs),
                sum(t.compressor_calls for t in runs),
            )
            for task_id, runs in by_task.items()
        )
        first = self.evaluations[0].scores
        return Scores(tasks, directory=first.directory, summary={"repeats": len(self.evaluations)})


def mostly(passed: int, ran: int, *, passing: bool) -> bool:
    """Passed (or failed) on a strict majority of `ran` episodes."""
    return ran > 0 and 2 * (passed if passing else ran - passed) > ran


def majority_pairs(full: Repeats, compressed: Repeats, tasks: Sequence[Task]) -> list[Pair]:
    """Tasks full context passes on most seeds and the candidate fails on most, each with a diff of one seed's
    episodes (the same seed where both went their way) and the behavioural cause of the failure."""
    by_id = {t.id: t for t in tasks}
    full_passes, compressed_passes = full.passes(), compressed.passes()
    pairs = []
    for task_id, (won, ran) in full_passes.items():
        theirs = compressed_passes.get(task_id)
        if theirs is None or not mostly(won, ran, passing=True) or not mostly(*theirs, passing=False):
            continue
        passing = full.episodes(task_id)
        failing = compressed.episodes(task_id)
        seeds = [(f, c) for f, c in zip(passing, failing, strict=False) if f.success and not c.success]
        good, bad = (
            seeds[0] if seeds else (next(f for f in passing if f.success), next(c for c in failing if not c.success))
        )
        task = by_id.get(task_id)
        diff = diff_pair(good, bad, task)
        cause = behavioural_cause(bad, task, [m.literal for m in diff.missing], good)
        if cause == AGENT_VARIANCE:
            continue  # the agent parted from full context before compression changed what it saw: nothing to learn
        pairs.append(Pair(good, bad, dataclasses.replace(diff, cause=cause), task))
    return pairs
