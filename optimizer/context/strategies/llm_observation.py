"""`llm_observation`: ACON observation compression.

A fresh tool result over `t_obs` tokens is rewritten by an LLM under the guideline's observation
instruction before it enters the history. Classes the contract protects at write time (skills,
receipts, unclassified) are never sent to the compressor.
"""

from __future__ import annotations

import hashlib
import json
from typing import Literal

from pydantic import Field

from optimizer.context.contract import contract_for
from optimizer.context.guideline import SEED_GUIDELINE, GuidelinePath, guideline_at
from optimizer.context.history import Entry, History
from optimizer.context.strategies._llm import compress_observation
from optimizer.context.strategies.base import ContextStrategy, StrategyContext, Written


class LlmObservation(ContextStrategy):
    """Compress large tool results with an LLM at write time."""

    type: Literal["llm_observation"] = "llm_observation"
    guideline: GuidelinePath = Field(
        str(SEED_GUIDELINE), description="Guideline file whose observation instruction is used."
    )
    t_obs: int = Field(1024, gt=0, description="Results above this many tokens are compressed.")
    max_tokens: int = Field(384, gt=0, description="Completion cap for a compressed result.")

    @property
    def uses_compressor(self) -> bool:
        return True

    def version(self) -> str:
        # By the guideline file's content, not its path: an edited file compresses differently.
        data = {**self.model_dump(mode="json"), "guideline": guideline_at(self.guideline).version}
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:12]

    def write(self, raw: Entry, history: History, ctx: StrategyContext) -> Written:
        if raw.tokens <= self.t_obs or not contract_for(raw.retention).write_time_cut:
            return Written(raw.content)
        text = guideline_at(self.guideline)
        return compress_observation(
            raw, history, ctx, guideline=text.observation, max_tokens=self.max_tokens,
            strategy=self.type, version=text.version,
        )
