"""`offload_preview`: large results go to a store; the context keeps a head/tail preview and a handle.

deepagents-style offloading, as one `offload` move at write time. Only classes the contract lets a
write-time stage cut are offloaded; must-keep lines are always shown.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from optimizer.context.moves import Offload
from optimizer.context.policy import RetentionPolicy
from optimizer.context.strategies.base import ContextStrategy


class OffloadPreview(ContextStrategy):
    """Offload large tool results, keep a preview."""

    type: Literal["offload_preview"] = "offload_preview"
    max_tokens: int = Field(800, gt=0, description="Results larger than this are offloaded.")
    head_tokens: int = Field(200, ge=0, description="Tokens of the start kept in the preview.")
    tail_tokens: int = Field(80, ge=0, description="Tokens of the end kept in the preview.")

    def policy(self) -> RetentionPolicy:
        offload = Offload(over=self.max_tokens, head_tokens=self.head_tokens, tail_tokens=self.tail_tokens)
        return RetentionPolicy(pinned=(), write=(offload,))
