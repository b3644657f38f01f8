"""`[optimize.target] type = "anthropic"`: Anthropic's server-side compaction and its trigger."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from optimizer.summary.targets import TargetConfig

if TYPE_CHECKING:
    from optimizer.summary.anthropic_target import AnthropicCompaction
    from optimizer.summary.defaults import TargetDefault


class AnthropicTarget(TargetConfig):
    """`context_management.edits = [{"type": "compact_20260112", "trigger": ..., "instructions": ...}]`."""

    type: Literal["anthropic"] = "anthropic"
    trigger_tokens: int = Field(..., gt=0, description="Compaction trigger in input tokens (acon counts the history).")

    def strategy(self, instructions: str | None) -> AnthropicCompaction:
        from optimizer.summary.anthropic_target import AnthropicCompaction

        return AnthropicCompaction(trigger_tokens=self.trigger_tokens, instructions=instructions)

    def default(self) -> TargetDefault:
        from optimizer.summary.defaults import anthropic_default

        return anthropic_default()
