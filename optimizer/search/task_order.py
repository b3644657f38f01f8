"""Which tasks a costly step runs on first: a few tasks should span the suite's task families."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

from optimizer.world.task import Task


def across_families(ordered_ids: Sequence[str], families: Mapping[str, object]) -> list[str]:
    """`ordered_ids` taken in turns from each task family, each family's own order kept.

    Families differ in what a compressor call sees: screened on one family (the one that peaks highest),
    an LLM candidate can pass without a single call firing and then cost hours on the whole split."""
    by_family: dict[object, list[str]] = {}
    for task_id in ordered_ids:
        by_family.setdefault(families.get(task_id), []).append(task_id)
    turns = itertools.zip_longest(*by_family.values())
    return [task_id for turn in turns for task_id in turn if task_id is not None]


def spread(tasks: Sequence[Task]) -> list[Task]:
    """`tasks` in turns from each family (`meta["family"]`), so their first few are not all of one kind."""
    by_id = {t.id: t for t in tasks}
    order = across_families([t.id for t in tasks], {t.id: t.meta.get("family") for t in tasks})
    return [by_id[task_id] for task_id in order]
