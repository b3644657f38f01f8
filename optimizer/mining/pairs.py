"""Pairs: tasks that succeeded with full context and failed with compression.

Infrastructure errors on either side are never pairs: a dead endpoint says nothing about what
compression dropped.
"""

from __future__ import annotations

from collections.abc import Sequence

from optimizer.agent.episode import Episode


def find_pairs(full: Sequence[Episode], compressed: Sequence[Episode]) -> list[tuple[Episode, Episode]]:
    by_task = {e.task_id: e for e in full}
    pairs = []
    for episode in compressed:
        baseline = by_task.get(episode.task_id)
        if baseline is None:
            continue
        if baseline.outcome == "success" and episode.outcome == "failure":
            pairs.append((baseline, episode))
    return pairs


def compressed_successes(full: Sequence[Episode], compressed: Sequence[Episode]) -> list[Episode]:
    """Tasks both runs solved: where the CO step looks for content the agent never used."""
    solved = {e.task_id for e in full if e.success}
    return [e for e in compressed if e.success and e.task_id in solved]
