"""`mask_last_n`: observations older than the last n steps become a one-line placeholder.

SWE-agent's observation masking (The Complexity Trap's cheapest strategy), as one `mask` move.
`polling` re-masks only every `polling` steps so the sent prefix stays stable between polls.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from optimizer.context.moves import Mask
from optimizer.context.policy import RetentionPolicy
from optimizer.context.strategies.base import ContextStrategy


class MaskLastN(ContextStrategy):
    """Observation masking over a sliding window of recent steps."""

    type: Literal["mask_last_n"] = "mask_last_n"
    n: int = Field(3, ge=1, description="Most recent steps whose observations stay raw.")
    polling: int = Field(1, ge=1, description="Re-mask only every `polling` steps to limit cache breaks.")
    keep_first: bool = Field(True, description="Never mask the first observation of the episode.")
    recoverable: bool = Field(False, description="Store masked content and offer `recall` (SWE-agent: no).")

    def policy(self) -> RetentionPolicy:
        mask = Mask(keep_last=self.n, polling=self.polling, keep_first=self.keep_first, recoverable=self.recoverable)
        return RetentionPolicy(pinned=(), history=(mask,))
