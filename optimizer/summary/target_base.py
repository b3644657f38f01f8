"""What the summarizer targets share: free instruction text, a content version, the summary as one edit.

A target strategy fixes the policy to what the deployed system can do and leaves free only its
instruction text and knobs. Its `policy()` is the nearest acon policy (one `summarize` move), used by the
exporters and the reports; `condense` is the target's own policy and never goes through acon's moves.
"""

from __future__ import annotations

import hashlib
from typing import ClassVar

from pydantic import Field

from optimizer.context.compressor import CompressorOutput
from optimizer.context.history import History, Summarize
from optimizer.context.moves import CompressorTexts, SummarizeOld
from optimizer.context.moves.base import Condensation, StrategyContext, current_summary, replay_record
from optimizer.context.policy import RetentionPolicy
from optimizer.context.strategies.base import ContextStrategy, StrategyKind
from optimizer.context.thresholds import SUMMARY_MAX_TOKENS
from optimizer.errors import ConfigError


class SummaryTarget(ContextStrategy):
    """A production summarizer's policy with free instruction text (None: the target's default)."""

    kind: ClassVar[StrategyKind] = "llm_baseline"
    target: ClassVar[str] = ""
    # Whether its prompt is a template the text may carry lines after the conversation in
    # (`optimizer.context.summary_template`); a target whose layout is not the user's to set has no closing.
    takes_closing: ClassVar[bool] = False

    instructions: str | None = Field(None, description="Summary instructions; None: the target's own default.")
    max_tokens: int = Field(SUMMARY_MAX_TOKENS, gt=0, description="Completion cap for one summary.")

    def instruction_text(self) -> str:
        """The text the target is given (the default read from the installed package when unset)."""
        raise NotImplementedError

    def trigger(self) -> int:
        raise NotImplementedError

    def keep_steps(self) -> int:
        return 1

    def policy(self) -> RetentionPolicy:
        move = SummarizeOld(over=self.trigger(), keep_last=self.keep_steps(), max_tokens=self.max_tokens, index=False)
        return RetentionPolicy(pinned=(), history=(move,))

    @property
    def uses_compressor(self) -> bool:
        return True

    def texts(self) -> CompressorTexts:
        text = self.instruction_text()
        version = hashlib.sha256(f"{self.target}\n{text}".encode()).hexdigest()[:12]
        return CompressorTexts(history=text, observation="", version=version)

    def label(self) -> str:
        return f"{self.type}@{self.texts().version}"

    def _summary_edit(
        self,
        history: History,
        ctx: StrategyContext,
        new_ids: set[int],
        shown: str,
        reply: CompressorOutput,
        prompt: str,
    ) -> Condensation:
        """The summary standing in for `new_ids` and whatever the previous summary covered."""
        previous = current_summary(history)
        task_ids = {e.id for e in history.entries if e.kind.value == "task"}
        # acon's agent always keeps its task statement (the replay never drops it); the targets fold it in.
        covered = tuple(sorted((set(previous.entry_ids) if previous else set()) | (new_ids - task_ids)))
        edits = (Summarize(covered, shown),)
        record = replay_record(
            "summarize",
            history,
            edits,
            ctx,
            guideline_version=self.texts().version,
            compressor_usage=reply.usage,
            compressor_cached=reply.cached,
            compressor_retries=reply.retries,
            compressor_io=(prompt, reply.text),
        )
        return Condensation(edits, (record,))

    @staticmethod
    def _needs_compressor(ctx: StrategyContext) -> None:
        if ctx.compressor is None:
            raise ConfigError(f"strategy {ctx.strategy!r} needs a compressor endpoint")
