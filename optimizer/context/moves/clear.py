"""`clear`: past a token trigger, the oldest tool results become recall placeholders (context editing).

What `clear_tool_uses` does (Anthropic's context editing), as a move: once the replayed context passes
`trigger_tokens`, results older than the last `keep_last` are cleared, unless that would free fewer
than `clear_at_least` tokens (a cache break must pay for itself). Cleared content is recoverable through
`recall(handle)`. Classification decides what may go, never the content.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from optimizer.context.history import History, Replace
from optimizer.context.moves.base import (
    CompressorTexts,
    Condensation,
    HistoryMove,
    StrategyContext,
    clearable,
    replay_record,
)
from optimizer.context.moves.knobs import GRAFTED_HIDE_OVER, LOWER, MIN_OVER, Knob, Pin, Scale, Turn, keep_last
from optimizer.context.recall import placeholder
from optimizer.world.retention import RetentionClass


class Clear(HistoryMove):
    """Clear old tool results past a token trigger."""

    move: Literal["clear"] = "clear"
    # Its threshold is the trigger: tighten lowers that, not `over` (which only the provoked parent cuts).
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("trigger_tokens", 256, None, "down", (Turn(LOWER, Scale(0.6)),), provoke=Pin(0)),
        keep_last(0),
        Knob("over", MIN_OVER, None, "down", provoke=Scale(0.1, bound=64), graft_floor=GRAFTED_HIDE_OVER),
    )
    trigger_tokens: int = Field(4000, ge=0, description="Clear once the replayed history exceeds this.")
    keep_last: int = Field(3, ge=0, description="Most recent tool results never cleared.")
    clear_at_least: int = Field(0, ge=0, description="Skip clearing that would free fewer tokens than this.")
    exclude_tools: tuple[str, ...] = Field((), description="Tools whose results are never cleared.")
    over: int = Field(0, ge=0, description="Only results longer than this many tokens (context editing: 0).")

    def condense(
        self, history: History, ctx: StrategyContext, texts: CompressorTexts | None, pinned: tuple[RetentionClass, ...]
    ) -> Condensation | None:
        if history.view_tokens() <= self.trigger_tokens:
            return None
        latest = history.latest_reads()
        protected = set(history.last_results(self.keep_last))
        edits: list[Replace] = []
        handles: list[str] = []
        freed = 0
        for entry_id in history.unedited_results():  # a result shown rewritten is cleared already
            original = history.entry(entry_id)
            if entry_id in protected or original.tokens <= self.over:
                continue  # recent, or too small to be worth a cache break
            if original.call is not None and original.call.name in self.exclude_tools:
                continue
            if not clearable(original, latest_ids=latest) or not self.applies_to(original.retention, pinned):
                continue
            candidate = history.replacement(
                entry_id, placeholder(original, ctx.store.peek(original), advertised=ctx.store.advertised)
            )
            if candidate.tokens >= original.tokens:
                continue  # a placeholder longer than the result saves nothing
            handle = ctx.store.put(original)
            freed += original.tokens - candidate.tokens
            edits.append(candidate)
            handles.append(handle)
        if not edits or freed < self.clear_at_least:
            return None
        record = replay_record(
            "clear", history, edits, ctx, handles=tuple(handles), guideline_version=texts.version if texts else None
        )
        return Condensation(tuple(edits), (record,))
