"""`[optimize.target] type = "langchain"`: LangChain's `SummarizationMiddleware` and its knobs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field, field_validator

from optimizer.summary.targets import TargetConfig

if TYPE_CHECKING:
    from optimizer.summary.defaults import TargetDefault
    from optimizer.summary.langchain_target import LangChainSummary


class LangChainTarget(TargetConfig):
    """`SummarizationMiddleware(trigger=("tokens", trigger_tokens), keep=("messages", keep_messages), ...)`."""

    type: Literal["langchain"] = "langchain"
    trigger_tokens: int = Field(..., gt=0, description="LangChain `trigger=('tokens', N)` (its approximate count).")
    keep_messages: int = Field(
        ..., gt=0, description="LangChain `keep=('messages', N)`; even, so a tool call stays with its result."
    )
    trim_tokens_to_summarize: int | None = Field(
        None, gt=0, description="LangChain's setting of that name; unset: the installed default."
    )

    @field_validator("keep_messages")
    @classmethod
    def _whole_steps(cls, value: int) -> int:
        # acon's policy and its export keep whole steps (a call with its result): an odd count cannot ship.
        if value % 2:
            raise ValueError(f"keep_messages must be even (a tool call and its result are two messages), not {value}")
        return value

    def strategy(self, instructions: str | None) -> LangChainSummary:
        from optimizer.summary.langchain_target import LangChainSummary

        return LangChainSummary(
            trigger_tokens=self.trigger_tokens,
            keep_messages=self.keep_messages,
            trim_tokens_to_summarize=self.trim_tokens_to_summarize,
            instructions=instructions,
        )

    def default(self) -> TargetDefault:
        from optimizer.summary.defaults import langchain_default

        return langchain_default()
