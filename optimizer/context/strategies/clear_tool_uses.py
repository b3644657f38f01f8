"""`clear_tool_uses`: Anthropic-style context editing, as one `clear` move.

Once the context passes `trigger_tokens`, the oldest tool results are replaced by recall placeholders,
keeping the last `keep_last` tool results, unless that would free fewer than `clear_at_least` tokens.
Classification decides what may go, never the content: a result that calls itself a skill is still
cleared if its tool is registered `static`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from optimizer.context.moves import Clear
from optimizer.context.policy import RetentionPolicy
from optimizer.context.strategies.base import ContextStrategy


class ClearToolUses(ContextStrategy):
    """Clear old tool results past a token trigger."""

    type: Literal["clear_tool_uses"] = "clear_tool_uses"
    trigger_tokens: int = Field(4000, gt=0, description="Clear once the replayed history exceeds this.")
    keep_last: int = Field(3, ge=0, description="Most recent tool results never cleared.")
    clear_at_least: int = Field(0, ge=0, description="Skip clearing that would free fewer tokens than this.")
    exclude_tools: tuple[str, ...] = Field((), description="Tools whose results are never cleared.")

    def policy(self) -> RetentionPolicy:
        clear = Clear(
            trigger_tokens=self.trigger_tokens,
            keep_last=self.keep_last,
            clear_at_least=self.clear_at_least,
            exclude_tools=self.exclude_tools,
        )
        return RetentionPolicy(pinned=(), history=(clear,))
