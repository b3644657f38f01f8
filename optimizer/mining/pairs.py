"""Pairs: tasks that succeeded with full context and failed with compression.

Infrastructure errors on either side are never pairs: a dead endpoint says nothing about what
compression dropped.
"""

from __future__ import annotations

from collections.abc import Sequence

from optimizer.agent.episode import Episode


def find_pairs(full: Sequence[Episode], compressed: Sequence[Episode], *, near_misses: bool = False
               ) -> list[tuple[Episode, Episode]]:
    """Full succeeded, compressed failed. With `near_misses`, also compressed successes that needed a recall:
    the context had lost what a step needed, and only the recall (its step and tokens) saved the task."""
    by_task = {e.task_id: e for e in full}
    pairs = []
    for episode in compressed:
        baseline = by_task.get(episode.task_id)
        if baseline is None or baseline.outcome != "success":
            continue
        if episode.outcome == "failure" or (near_misses and episode.success and is_near_miss(episode)):
            pairs.append((baseline, episode))
    return pairs


def is_near_miss(episode: Episode) -> bool:
    return any(d.get("behaviour") == "recall" for d in episode.deviations)


def compressed_successes(full: Sequence[Episode], compressed: Sequence[Episode]) -> list[Episode]:
    """Tasks both runs solved: where the CO step looks for content the agent never used."""
    solved = {e.task_id for e in full if e.success}
    return [e for e in compressed if e.success and e.task_id in solved]
