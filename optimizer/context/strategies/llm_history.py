"""`llm_history`: ACON history compression.

When the previous summary plus the not-yet-summarized steps exceed `t_hist` tokens, an LLM folds
them into a new summary under the guideline's history instruction; the summary is shown right after
the task and the last `keep_last` steps stay raw. ACON pins nothing; `pinned` lets a run keep
chosen classes verbatim outside the summary. Steps with a result the contract forbids compressing
(unclassified content) never enter the summary either.
"""

from __future__ import annotations

import hashlib
import json
from typing import Literal

from pydantic import Field

from optimizer.context.contract import Action, may
from optimizer.context.guideline import SEED_GUIDELINE, GuidelinePath, guideline_at
from optimizer.context.history import Entry, History
from optimizer.context.strategies._llm import current_summary, summarize, unsummarized_groups
from optimizer.context.strategies.base import Condensation, ContextStrategy, StrategyContext
from optimizer.tokens import count_tokens
from optimizer.world.retention import RetentionClass


class LlmHistory(ContextStrategy):
    """Summarize old history with an LLM once it passes a threshold."""

    type: Literal["llm_history"] = "llm_history"
    guideline: GuidelinePath = Field(
        str(SEED_GUIDELINE), description="Guideline file whose history instruction is used."
    )
    t_hist: int = Field(2048, gt=0, description="Token threshold on previous summary + unsummarized steps.")
    keep_last: int = Field(1, ge=1, description="Most recent steps kept raw (ACON keeps the last one).")
    max_tokens: int = Field(512, gt=0, description="Completion cap for the summary.")
    pinned: tuple[RetentionClass, ...] = Field((), description="Classes kept verbatim, outside the summary.")

    @property
    def uses_compressor(self) -> bool:
        return True

    def version(self) -> str:
        # By the guideline file's content, not its path: an edited file compresses differently.
        data = {**self.model_dump(mode="json"), "guideline": guideline_at(self.guideline).version}
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:12]

    def condense(self, history: History, ctx: StrategyContext) -> Condensation | None:
        groups = unsummarized_groups(history, self.keep_last)
        groups = [g for g in groups if not any(self._kept(e) for e in g)]
        entries = [e for g in groups for e in g]
        previous = current_summary(history) or ""
        if not entries or count_tokens(previous) + sum(e.tokens for e in entries) <= self.t_hist:
            return None
        text = guideline_at(self.guideline)
        return summarize(
            history, ctx, entries, guideline=text.history, max_tokens=self.max_tokens,
            strategy=self.type, version=text.version,
        )

    def _kept(self, entry: Entry) -> bool:
        if not entry.is_result:
            return False
        return entry.retention in self.pinned or not may(entry.retention, Action.COMPRESS)
