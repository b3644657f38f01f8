"""Pairs: tasks that succeeded with full context and failed with compression.

Infrastructure errors on either side are never pairs: a dead endpoint says nothing about what
compression dropped.
"""

from __future__ import annotations

from collections.abc import Sequence

from optimizer.agent.episode import Episode
from optimizer.evaluate.records import EpisodeRecords, summaries_of


def find_pairs(
    full: Sequence[Episode], compressed: Sequence[Episode], *, near_misses: bool = False
) -> list[tuple[Episode, Episode]]:
    """Full succeeded, compressed failed. With `near_misses`, also compressed successes that needed a recall:
    the context had lost what a step needed, and only the recall (its step and tokens) saved the task."""
    # Outcomes of the full run from its summaries; a baseline's record is read only for a pair.
    solved = {e.task_id for e in summaries_of(full) if e.outcome == "success"}
    compressed_outcomes = summaries_of(compressed)
    by_task = {} if isinstance(full, EpisodeRecords) else {e.task_id: e for e in full}
    pairs = []
    for light in compressed_outcomes:
        if light.task_id not in solved or light.outcome == "infra_error":
            continue
        if light.outcome == "success" and not near_misses:
            continue
        episode = compressed.get(light.task_id) if isinstance(compressed, EpisodeRecords) else light
        # A store holds the record of each of its summaries; without a store, `light` is the episode itself.
        assert isinstance(episode, Episode)
        if episode.outcome == "failure" or (near_misses and episode.success and is_near_miss(episode)):
            baseline = full.get(episode.task_id) if isinstance(full, EpisodeRecords) else by_task[episode.task_id]
            assert baseline is not None  # full solved this task, so its store has the record
            pairs.append((baseline, episode))
    return pairs


def is_near_miss(episode: Episode) -> bool:
    return any(d.get("behaviour") == "recall" for d in episode.deviations)


def compressed_successes(full: Sequence[Episode], compressed: Sequence[Episode]) -> list[Episode]:
    """Tasks both runs solved: where the CO step looks for content the agent never used."""
    solved = {e.task_id for e in summaries_of(full) if e.success}
    if isinstance(compressed, EpisodeRecords):
        ids = [s.task_id for s in compressed.summaries if s.success and s.task_id in solved]
        return [episode for task_id in ids if (episode := compressed.get(task_id)) is not None]
    return [e for e in compressed if e.success and e.task_id in solved]
