"""`mask`: observations older than the last `keep_last` steps become a one-line placeholder.

SWE-agent's observation masking (The Complexity Trap's cheapest strategy): what `mask_last_n` does, as a
move. `polling` re-masks only every `polling` steps, so between polls the sent prefix is stable and the
prompt cache survives. The first observation is kept (it usually frames the task). Pinned and
unclassified results and the latest state read are never masked; must-keep lines survive.
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar, Literal

from pydantic import Field

from optimizer.context.history import Edit, EntryKind, History
from optimizer.context.moves.base import (
    CompressorTexts,
    Condensation,
    HistoryMove,
    StrategyContext,
    clearable,
    replay_record,
)
from optimizer.context.moves.knobs import GRAFTED_HIDE_OVER, OVER, Knob, keep_last
from optimizer.context.recall import placeholder
from optimizer.world.retention import RetentionClass


class Mask(HistoryMove):
    """Observation masking over a sliding window of recent steps."""

    move: Literal["mask"] = "mask"
    knobs: ClassVar[tuple[Knob, ...]] = (replace(OVER, graft_floor=GRAFTED_HIDE_OVER), keep_last(1))
    keep_last: int = Field(3, ge=1, description="Most recent steps whose observations stay raw.")
    polling: int = Field(1, ge=1, description="Re-mask only every `polling` steps to limit cache breaks.")
    keep_first: bool = Field(True, description="Never mask the first observation of the episode.")
    recoverable: bool = Field(False, description="Store masked content and offer `recall` (SWE-agent: no).")
    over: int = Field(0, ge=0, description="Only results longer than this many tokens (SWE-agent: 0, all).")

    @property
    def offers_recall(self) -> bool:
        return self.recoverable

    def condense(
        self, history: History, ctx: StrategyContext, texts: CompressorTexts | None, pinned: tuple[RetentionClass, ...]
    ) -> Condensation | None:
        if ctx.step % self.polling != 0:
            return None
        groups = history.step_groups()
        if len(groups) <= self.keep_last:
            return None
        window = groups[len(groups) - self.keep_last][0].step  # groups are in step order, one per step
        done = history.edited()
        latest = history.latest_reads()
        first_result = next((e.id for e in history.entries if e.kind is EntryKind.RESULT), None)
        # Only a result can be masked, and one shown rewritten is masked or cleared already: the results still
        # shown as written are all there is to weigh, not every entry of every step before the window (a pass
        # over the whole conversation at each request). In the order of the steps, then of the entries.
        older = [e for e in map(history.entry, history.unedited_results()) if e.step < window]
        older.sort(key=lambda e: (e.step, e.id))
        edits: list[Edit] = []
        handles: list[str] = []
        for entry in older:
            if entry.id in done or entry.tokens <= self.over or not clearable(entry, latest_ids=latest):
                continue
            if not self.applies_to(entry.retention, pinned):
                continue
            if self.keep_first and entry.id == first_result:
                continue
            if self.recoverable:
                edit = history.replacement(
                    entry.id,
                    placeholder(entry, ctx.store.peek(entry), reason="masked", advertised=ctx.store.advertised),
                )
            else:
                lines = entry.content.count("\n") + 1
                edit = history.replacement(
                    entry.id, "\n".join([f"[Old tool output omitted: {lines} lines]", *entry.must_keep])
                )
            if edit.tokens >= entry.tokens:
                continue  # masking a result shorter than its placeholder saves nothing
            if self.recoverable:
                handles.append(ctx.store.put(entry))
            edits.append(edit)
        if not edits:
            return None
        record = replay_record(
            "mask", history, edits, ctx, handles=tuple(handles), guideline_version=texts.version if texts else None
        )
        return Condensation(tuple(edits), (record,))
