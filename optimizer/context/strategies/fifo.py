"""`fifo`: keep the task and the last k agent steps (ACON's FIFO baseline keeps 5).

One `drop` move: older steps are dropped whole, so a call is never separated from its result. Steps
whose results the contract forbids clearing stay; must-keep lines of dropped results survive.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from optimizer.context.moves import DropOld
from optimizer.context.policy import RetentionPolicy
from optimizer.context.strategies.base import ContextStrategy


class Fifo(ContextStrategy):
    """First in, first out over agent steps."""

    type: Literal["fifo"] = "fifo"
    keep_last: int = Field(5, ge=1, description="Agent steps kept, counting back from the latest.")

    def policy(self) -> RetentionPolicy:
        return RetentionPolicy(pinned=(), history=(DropOld(keep_last=self.keep_last),))
