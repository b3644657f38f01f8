"""`drop`: keep the task and the last `keep_last` agent steps, drop older steps whole (FIFO).

What `fifo` does, as a move (ACON's FIFO baseline keeps 5). A call is never separated from its result.
Steps with a result the contract forbids clearing (skills, receipts, unclassified, the latest state
read) or one this move does not apply to stay; must-keep lines of dropped results survive as a one-line
stand-in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from pydantic import Field

from optimizer.context.history import Drop, Edit, Entry, EntryKind, History, Replace
from optimizer.context.moves.base import (
    CompressorTexts,
    Condensation,
    HistoryMove,
    StrategyContext,
    clearable,
    replay_record,
)
from optimizer.context.moves.knobs import Knob, keep_last
from optimizer.world.retention import RetentionClass

DROPPED = "[old tool output dropped]"


class DropOld(HistoryMove):
    """First in, first out over agent steps."""

    move: Literal["drop"] = "drop"
    knobs: ClassVar[tuple[Knob, ...]] = (keep_last(1),)
    keep_last: int = Field(5, ge=1, description="Agent steps kept, counting back from the latest.")

    @property
    def offers_recall(self) -> bool:
        return False

    def condense(
        self, history: History, ctx: StrategyContext, texts: CompressorTexts | None, pinned: tuple[RetentionClass, ...]
    ) -> Condensation | None:
        done = history.edited()
        latest = history.latest_reads()
        groups = history.step_groups()
        edits: list[Edit] = []
        for group in groups[: max(0, len(groups) - self.keep_last)]:
            results = [e for e in group if e.kind is EntryKind.RESULT]
            if all(e.id in done for e in (results or group)):
                continue
            if any(not clearable(e, latest_ids=latest) or not self.applies_to(e.retention, pinned) for e in results):
                continue  # a result that must stay keeps its whole step
            if any(e.must_keep for e in results):
                # The action stays for the must-keep lines, so each of its results stays as a stand-in:
                # a call is never shown without its result.
                for entry in results:
                    edits.append(Replace(entry.id, "\n".join(entry.must_keep) or DROPPED))
                rest: Sequence[Entry] = [e for e in group if e.kind is EntryKind.NOTICE]
            else:
                rest = group
            if rest:
                edits.append(Drop(tuple(e.id for e in rest)))
        if not edits:
            return None
        record = replay_record("drop", history, edits, ctx, guideline_version=texts.version if texts else None)
        return Condensation(tuple(edits), (record,))
