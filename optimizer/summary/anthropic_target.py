"""Anthropic's server-side compaction (`compact_20260112`) as a context strategy.

Once the input passes `trigger`, the whole conversation so far is replaced by one summary (the API drops
every block before the compaction block). What is free is `instructions`, which the SDK describes as
"additional instructions for summarization": the server keeps its own prompt and its own layout, and
neither is published. So the summary call here is a stand-in: the conversation as acon renders it, an
acon-written request to summarize it so the work can continue, and the instructions after it. What is
measured is the instruction text under a known summarizer, not Anthropic's model or prompt; the default
(no instructions) row is this stand-in with nothing added, never Anthropic's hidden text.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from optimizer.context.history import EntryKind, History
from optimizer.context.moves.base import Condensation, StrategyContext
from optimizer.context.transcript import render_transcript
from optimizer.summary.call import call_summarizer
from optimizer.summary.target_base import SummaryTarget
from optimizer.untrusted import fence

STAND_IN_REQUEST = (
    "The conversation above is about to be replaced by your summary; the work continues from the summary "
    "alone. Write that summary."
)


class AnthropicCompaction(SummaryTarget):
    """`context_management.edits = [{"type": "compact_20260112", "trigger": ..., "instructions": ...}]`."""

    type: Literal["anthropic_compaction"] = "anthropic_compaction"
    target = "anthropic"
    trigger_tokens: int = Field(gt=0, description="Compaction trigger in input tokens (acon counts the history).")

    def instruction_text(self) -> str:
        return self.instructions or ""

    def trigger(self) -> int:
        return self.trigger_tokens

    def prompt(self, transcript: str) -> str:
        parts = [f"# Conversation\n{fence(transcript, 'history')}", STAND_IN_REQUEST]
        if self.instruction_text().strip():
            parts.append(f"Additional instructions for the summary:\n{self.instruction_text().strip()}")
        return "\n\n".join(parts)

    def condense(self, history: History, ctx: StrategyContext) -> Condensation | None:
        view = history.replay()
        folded = [e for e in view if e.kind is not EntryKind.TASK]
        if not folded or sum(e.tokens for e in view) <= self.trigger_tokens:
            return None
        self._needs_compressor(ctx)
        assert ctx.compressor is not None
        prompt = self.prompt(render_transcript(view))
        out = call_summarizer(ctx.compressor, [{"role": "user", "content": prompt}], self.max_tokens)
        ids = {e.id for e in folded if e.id >= 0}
        return self._summary_edit(history, ctx, ids, out.text, out, prompt)
