"""`llm_history`: ACON history compression, as one `summarize` move.

When the previous summary plus the not-yet-summarized steps exceed `t_hist` tokens, an LLM folds them
into a new summary under the guideline's history instruction; the summary is shown right after the task
and the last `keep_last` steps stay raw. ACON pins nothing and keeps no copy of what it summarized;
`pinned` lets a run keep chosen classes verbatim outside the summary. Steps with a result the contract
forbids compressing (unclassified content) never enter the summary.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, PrivateAttr

from optimizer.context.guideline import SEED_GUIDELINE, GuidelinePath, guideline_at
from optimizer.context.moves import CompressorTexts, SummarizeOld
from optimizer.context.policy import RetentionPolicy
from optimizer.context.strategies.base import ContextStrategy
from optimizer.context.thresholds import KEEP_LAST_RAW, SUMMARY_MAX_TOKENS, T_HIST
from optimizer.world.retention import RetentionClass


class LlmHistory(ContextStrategy):
    """Summarize old history with an LLM once it passes a threshold."""

    type: Literal["llm_history"] = "llm_history"
    kind: ClassVar[Literal["llm_baseline"]] = "llm_baseline"
    guideline: GuidelinePath = Field(
        str(SEED_GUIDELINE), description="Guideline file whose history instruction is used."
    )
    t_hist: int = Field(T_HIST, gt=0, description="Token threshold on previous summary + unsummarized steps.")
    keep_last: int = Field(KEEP_LAST_RAW, ge=1, description="Most recent steps kept raw (ACON keeps the last one).")
    max_tokens: int = Field(SUMMARY_MAX_TOKENS, gt=0, description="Completion cap for the summary.")
    pinned: tuple[RetentionClass, ...] = Field((), description="Classes kept verbatim, outside the summary.")

    def policy(self) -> RetentionPolicy:
        summarize = SummarizeOld(over=self.t_hist, keep_last=self.keep_last, max_tokens=self.max_tokens, index=False)
        return RetentionPolicy(pinned=self.pinned, history=(summarize,))

    # The texts as read by `fixed()`: a run keeps the version it is keyed by while the file is edited.
    _read: CompressorTexts | None = PrivateAttr(None)

    def texts(self) -> CompressorTexts:
        return self._read or guideline_at(self.guideline).texts

    def fixed(self) -> LlmHistory:
        copy = self.model_copy()
        copy._read = self.texts()
        return copy
