"""`fifo`: keep the task and the last k agent steps (ACON's FIFO baseline keeps 5).

Older steps are dropped whole, so a call is never separated from its result. Steps whose results the
contract forbids clearing (skills, receipts, unclassified, the latest state read) stay; must-keep
lines of dropped error/partial results survive as a one-line stand-in.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from optimizer.context.history import Drop, Edit, EntryKind, History, Replace
from optimizer.context.strategies.base import (
    Condensation,
    ContextStrategy,
    StrategyContext,
    already_edited,
    clearable,
    latest_reads,
    replay_record,
    step_groups,
)

DROPPED = "[old tool output dropped]"


class Fifo(ContextStrategy):
    """First in, first out over agent steps."""

    type: Literal["fifo"] = "fifo"
    keep_last: int = Field(5, ge=1, description="Agent steps kept, counting back from the latest.")

    def condense(self, history: History, ctx: StrategyContext) -> Condensation | None:
        done = already_edited(history)
        latest = latest_reads(history.entries)
        groups = step_groups(history.entries)
        edits: list[Edit] = []
        for group in groups[: max(0, len(groups) - self.keep_last)]:
            results = [e for e in group if e.kind is EntryKind.RESULT]
            if all(e.id in done for e in (results or group)):
                continue
            if any(not clearable(e, latest_ids=latest) for e in results):
                continue  # a pinned result keeps its whole step
            if any(e.must_keep for e in results):
                # The action stays for the must-keep lines, so each of its results stays as a stand-in:
                # a call is never shown without its result.
                for entry in results:
                    edits.append(Replace(entry.id, "\n".join(entry.must_keep) or DROPPED))
                rest = [e for e in group if e.kind is EntryKind.NOTICE]
            else:
                rest = group
            if rest:
                edits.append(Drop(tuple(e.id for e in rest)))
        if not edits:
            return None
        return Condensation(tuple(edits), (replay_record(self.type, "drop", history, edits, ctx),))
