"""`offload_preview`: large results go to a store; the context keeps a head/tail preview and a handle.

deepagents-style offloading, applied at write time. Only classes the contract lets a write-time
stage cut are offloaded; must-keep lines are always shown.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from optimizer.context.contract import contract_for
from optimizer.context.history import Entry, History
from optimizer.context.recall import placeholder
from optimizer.context.record import CompressionRecord
from optimizer.context.strategies.base import ContextStrategy, StrategyContext, Written
from optimizer.tokens import count_tokens, last_tokens, truncate_to_tokens


class OffloadPreview(ContextStrategy):
    """Offload large tool results, keep a preview."""

    type: Literal["offload_preview"] = "offload_preview"
    max_tokens: int = Field(800, gt=0, description="Results larger than this are offloaded.")
    head_tokens: int = Field(200, ge=0, description="Tokens of the start kept in the preview.")
    tail_tokens: int = Field(80, ge=0, description="Tokens of the end kept in the preview.")

    @property
    def offers_recall(self) -> bool:
        return True

    def write(self, raw: Entry, history: History, ctx: StrategyContext) -> Written:
        if raw.tokens <= self.max_tokens or not contract_for(raw.retention).write_time_cut:
            return Written(raw.content)
        head = truncate_to_tokens(raw.content, self.head_tokens)
        tail = last_tokens(raw.content, self.tail_tokens)
        preview = f"{head}\n[... preview cut ...]\n{tail}" if tail else head
        handle = ctx.store.put(raw)
        content = placeholder(raw, handle, reason="offloaded", preview=preview)
        record = CompressionRecord(
            strategy=self.type, stage="write", step=ctx.step, action="offload", entry_ids=(raw.id,),
            tokens_before=raw.tokens, tokens_after=count_tokens(content),
            dropped_by_class={str(raw.retention or "unknown"): raw.tokens - count_tokens(content)},
            handles=(handle,),
        )
        return Written(content, record)

