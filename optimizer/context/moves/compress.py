"""`compress`: an LLM rewrites a large fresh result under the guideline's observation instruction (ACON).

With `recoverable` the original goes to the recall store and the compressed text names its handle:
"offload first, summarize second, keep the original". ACON's own observation compression keeps no copy.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from optimizer.context.contract import Action
from optimizer.context.history import Entry, History
from optimizer.context.moves.base import CompressorTexts, StrategyContext, WriteMove, Written, write_record
from optimizer.context.moves.knobs import OVER, SHORT, Knob, Scale, Turn
from optimizer.context.quarantine import quarantine
from optimizer.context.recall import recall_note, restore_must_keep
from optimizer.context.thresholds import OBSERVATION_MAX_TOKENS, T_OBS
from optimizer.errors import ConfigError
from optimizer.tokens import count_tokens
from optimizer.world.retention import RetentionClass


class Compress(WriteMove):
    """LLM observation compression above `over` tokens."""

    move: Literal["compress"] = "compress"
    action: ClassVar[Action] = Action.COMPRESS
    uses_compressor: ClassVar[bool] = True
    # Below 64 tokens a compressed result cannot hold its matching rows.
    knobs: ClassVar[tuple[Knob, ...]] = (OVER, Knob("max_tokens", 64, None, "down", (Turn(SHORT, Scale(0.6)),)))
    over: int = Field(T_OBS, ge=0, description="Results longer than this many tokens are compressed.")
    max_tokens: int = Field(OBSERVATION_MAX_TOKENS, gt=0, description="Completion cap for a compressed result.")
    recoverable: bool = Field(True, description="Keep the original behind a recall handle named in the text.")

    @property
    def offers_recall(self) -> bool:
        return self.recoverable

    def write(
        self, raw: Entry, current: str, history: History, ctx: StrategyContext, texts: CompressorTexts | None
    ) -> Written | None:
        if ctx.compressor is None or texts is None:
            raise ConfigError(f"strategy {ctx.strategy!r} needs a compressor endpoint")
        tool = raw.call.name if raw.call else "?"
        out = ctx.compressor.compress_observation(
            guideline=texts.observation, task=ctx.task, tool=tool, observation=current, max_tokens=self.max_tokens
        )
        # A skill is instructions by registration; anything else that reads like one is planted data.
        source = current if raw.retention is not RetentionClass.SKILL else ""
        content = restore_must_keep(quarantine(out.text, source=source, task=ctx.task).text, [raw])
        handles: tuple[str, ...] = ()
        if self.recoverable:
            handle = ctx.store.peek(raw)
            note = recall_note(raw, handle, "compressed", advertised=ctx.store.advertised)
            content = f"{note}\n{content}"
        before = count_tokens(current)
        if count_tokens(content) >= before:
            content = current  # a "compression" that grew the result is not applied
        elif self.recoverable:
            handles = (ctx.store.put(raw),)
        record = write_record(
            "compress",
            raw,
            before,
            count_tokens(content),
            ctx,
            guideline_version=texts.version,
            handles=handles,
            compressor_usage=out.usage,
            compressor_cached=out.cached,
            compressor_retries=out.retries,
            compressor_io=(out.prompt, out.text) if out.prompt else None,
        )
        return Written(content, (record,))
