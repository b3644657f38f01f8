"""The pairs of an `acon compare` run: per strategy, the tasks `none` solved and it failed, each diffed.

Read from what `acon compare --json` wrote: each row's run directory and task ids. The `none` row is the
full-context side of every pair; infrastructure errors are never pairs (`find_pairs`). Tier 1 diffs also
carry the behavioural cause of the failure, as `acon optimize`'s do.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optimizer.errors import AconError
from optimizer.evaluate.records import EpisodeRecords
from optimizer.evaluate.store import EpisodeStore
from optimizer.mining.causes import behavioural_cause
from optimizer.mining.pair_diff import PairDiff, diff_pair
from optimizer.mining.pairs import find_pairs
from optimizer.world.task import Task

FULL = "none"


@dataclass(frozen=True)
class StrategyPairs:
    strategy: str
    directory: Path
    diffs: list[PairDiff]


def is_compare_output(data: Any) -> bool:
    return isinstance(data, Mapping) and isinstance(data.get("rows"), list) and "experiment" in data


def compare_pairs(compare: Mapping[str, Any], tasks: Mapping[str, Task], *, source: str) -> list[StrategyPairs]:
    """Per compressed strategy of `compare` (the JSON of `acon compare --json`), its diffed pairs."""
    rows = compare["rows"]
    missing = [r.get("strategy", "?") for r in rows if "directory" not in r or "task_ids" not in r]
    if missing:
        raise AconError(f"{source}: row {missing[0]!r} has no run directory; re-run `acon compare --json` to diff it")
    full = [r for r in rows if r["strategy"] == FULL]
    if not full:
        ran = ", ".join(r["strategy"] for r in rows)
        raise AconError(f"{source}: the compare ran no `{FULL}` ({ran}), so no task has a full-context side")
    baseline = _records(full[0], source)
    tier1 = compare.get("agent") != "reference"
    out = []
    for row in rows:
        if row["strategy"] == FULL:
            continue
        diffs = []
        for good, bad in find_pairs(baseline, _records(row, source)):
            task = tasks.get(bad.task_id)
            diff = diff_pair(good, bad, task)
            if tier1:
                cause = behavioural_cause(bad, task, [m.literal for m in diff.missing], good)
                diff = dataclasses.replace(diff, cause=cause)
            diffs.append(diff)
        out.append(StrategyPairs(row["strategy"], Path(row["directory"]), diffs))
    return out


def _records(row: Mapping[str, Any], source: str) -> EpisodeRecords:
    directory = Path(row["directory"])
    if not (directory / "episodes.jsonl").is_file():
        raise AconError(f"{source}: {row['strategy']}'s episodes are gone ({directory / 'episodes.jsonl'})")
    store = EpisodeStore(directory)
    offsets, summaries = store.index()
    order = [t for t in row["task_ids"] if t in offsets]
    return EpisodeRecords(store.log, order, offsets, summaries)
