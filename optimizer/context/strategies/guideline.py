"""`guideline`: the strategy the optimizer learns.

A guideline file drives everything: its policy says which classes are pinned and which moves run at
write time and at history time (each baseline's moves among them, plus extraction and the LLM
compressors), and the pre-send budget; its body holds the history and observation compressor texts.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, SerializerFunctionWrapHandler, field_validator, model_serializer, model_validator

from optimizer.context.guideline import SEED_GUIDELINE, Guideline, check_contract, guideline_at
from optimizer.context.moves import CompressorTexts
from optimizer.context.policy import RetentionPolicy
from optimizer.context.strategies.base import ContextStrategy


class GuidelineStrategy(ContextStrategy):
    """A guideline's policy plus its compressor instructions."""

    type: Literal["guideline"] = "guideline"
    kind: ClassVar[Literal["learned"]] = "learned"
    guideline: Guideline | str = Field(str(SEED_GUIDELINE), description="A guideline file path, or the guideline.")
    allow_unpinned: bool = Field(
        False,
        description="Run a guideline that leaves skills or write receipts unpinned, so a summary may cut them "
        "(against the retention contract): to study that failure only. Without it such a guideline is refused; "
        "with it, every command that runs it says so.",
    )

    @model_serializer(mode="wrap")
    def _omit_default_override(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Left out when off, so the config of every valid guideline (stored in a run's meta) is as before.
        data: dict[str, Any] = handler(self)
        if not self.allow_unpinned:
            data.pop("allow_unpinned", None)
        return data

    @field_validator("guideline")
    @classmethod
    def _load(cls, value: Guideline | str) -> Guideline | str:
        if isinstance(value, str):
            guideline_at(value)
        return value

    @model_validator(mode="after")
    def _contract(self) -> GuidelineStrategy:
        self.contract_override()
        return self

    def contract_override(self) -> str | None:
        """The override to report when this strategy runs a guideline that unpins a contract class, else None;
        such a guideline without `allow_unpinned` is a `ConfigError`."""
        spec = self.spec
        source = self.guideline if isinstance(self.guideline, str) else None
        return check_contract(spec, source=source, allow_unpinned=self.allow_unpinned, override="set allow_unpinned")

    def fixed(self) -> GuidelineStrategy:
        if isinstance(self.guideline, Guideline):
            return self
        return GuidelineStrategy(guideline=self.spec, allow_unpinned=self.allow_unpinned)

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
