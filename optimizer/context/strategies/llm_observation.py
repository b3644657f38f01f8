"""`llm_observation`: ACON observation compression, as one `compress` move.

A fresh tool result over `t_obs` tokens is rewritten by an LLM under the guideline's observation
instruction before it enters the history; ACON keeps no copy of the original. Classes the contract
protects at write time (skills, receipts, unclassified) are never sent to the compressor.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, PrivateAttr

from optimizer.context.guideline import SEED_GUIDELINE, GuidelinePath, guideline_at
from optimizer.context.moves import Compress, CompressorTexts
from optimizer.context.policy import RetentionPolicy
from optimizer.context.strategies.base import ContextStrategy
from optimizer.context.thresholds import OBSERVATION_MAX_TOKENS, T_OBS


class LlmObservation(ContextStrategy):
    """Compress large tool results with an LLM at write time."""

    type: Literal["llm_observation"] = "llm_observation"
    kind: ClassVar[Literal["llm_baseline"]] = "llm_baseline"
    guideline: GuidelinePath = Field(
        str(SEED_GUIDELINE), description="Guideline file whose observation instruction is used."
    )
    t_obs: int = Field(T_OBS, gt=0, description="Results above this many tokens are compressed.")
    max_tokens: int = Field(OBSERVATION_MAX_TOKENS, gt=0, description="Completion cap for a compressed result.")

    def policy(self) -> RetentionPolicy:
        compress = Compress(over=self.t_obs, max_tokens=self.max_tokens, recoverable=False)
        return RetentionPolicy(pinned=(), write=(compress,))

    # The texts as read by `fixed()`: a run keeps the version it is keyed by while the file is edited.
    _read: CompressorTexts | None = PrivateAttr(None)

    def texts(self) -> CompressorTexts:
        return self._read or guideline_at(self.guideline).texts

    def fixed(self) -> LlmObservation:
        copy = self.model_copy()
        copy._read = self.texts()
        return copy
