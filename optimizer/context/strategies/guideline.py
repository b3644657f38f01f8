"""`guideline`: the strategy the optimizer learns.

A guideline file drives everything: its policy says which classes are pinned and which moves run at
write time and at history time (each baseline's moves among them, plus extraction and the LLM
compressors), and the pre-send budget; its body holds the history and observation compressor texts.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator

from optimizer.context.guideline import SEED_GUIDELINE, Guideline, guideline_at
from optimizer.context.moves import CompressorTexts
from optimizer.context.policy import RetentionPolicy
from optimizer.context.strategies.base import ContextStrategy


class GuidelineStrategy(ContextStrategy):
    """A guideline's policy plus its compressor instructions."""

    type: Literal["guideline"] = "guideline"
    kind: ClassVar[Literal["learned"]] = "learned"
    guideline: Guideline | str = Field(str(SEED_GUIDELINE), description="A guideline file path, or the guideline.")

    @field_validator("guideline")
    @classmethod
    def _load(cls, value: Guideline | str) -> Guideline | str:
        if isinstance(value, str):
            guideline_at(value)
        return value

    @property
    def spec(self) -> Guideline:
        return self.guideline if isinstance(self.guideline, Guideline) else guideline_at(self.guideline)

    def policy(self) -> RetentionPolicy:
        return self.spec.policy

    @property
    def _policy(self) -> RetentionPolicy:  # a file path is read again when the file changes
        return self.spec.policy

    def texts(self) -> CompressorTexts:
        return self.spec.texts

    def version(self) -> str:
        return self.spec.version

    def label(self) -> str:
        return f"guideline:{self.spec.name}@{self.spec.version}"
