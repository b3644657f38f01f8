"""`offload`: a large result goes to the recall store; the context keeps a head/tail preview and a handle.

deepagents-style offloading at write time: what `offload_preview` does, as a move.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

import optimizer.context.preview as preview
from optimizer.context.history import Entry, History
from optimizer.context.moves.base import CompressorTexts, StrategyContext, WriteMove, Written, write_record
from optimizer.context.moves.knobs import OVER, SHORT, Knob, Scale, Turn
from optimizer.context.recall import placeholder
from optimizer.tokens import count_tokens


class Offload(WriteMove):
    """Offload results over `over` tokens behind a recall handle, keeping a preview."""

    move: Literal["offload"] = "offload"
    knobs: ClassVar[tuple[Knob, ...]] = (
        OVER,
        Knob("head_tokens", 16, None, "down", (Turn(SHORT, Scale(0.6)),)),
        Knob("tail_tokens", 0, None, "down", (Turn(SHORT, Scale(0.6)),)),
    )
    over: int = Field(800, ge=0, description="Results longer than this many tokens are offloaded.")
    head_tokens: int = Field(200, ge=0, description="Tokens of the start kept in the preview.")
    tail_tokens: int = Field(80, ge=0, description="Tokens of the end kept in the preview.")
    name_cut: int = Field(
        0,
        ge=0,
        description="Name up to this many kinds of cut line (by label, rarest first) in the preview's cut "
        "marker, so the agent sees what recall would restore. 0: a bare marker.",
    )

    @model_serializer(mode="wrap")
    def _omit_unset_naming(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Off, the knob is left out, so every guideline written before it keeps its file and content hash.
        data: dict[str, Any] = handler(self)
        if self.name_cut == 0:
            data.pop("name_cut", None)
        return data

    def write(
        self, raw: Entry, current: str, history: History, ctx: StrategyContext, texts: CompressorTexts | None
    ) -> Written | None:
        head = preview.head(current, self.head_tokens)
        tail = preview.tail(current, self.tail_tokens)
        marker = preview.cut_marker(current, head, tail, self.name_cut)
        shown = f"{head}\n{marker}\n{tail}" if tail else head
        handle = ctx.store.put(raw)
        content = placeholder(raw, handle, reason="offloaded", preview=shown, advertised=ctx.store.advertised)
        record = write_record(
            "offload",
            raw,
            count_tokens(current),
            count_tokens(content),
            ctx,
            handles=(handle,),
            guideline_version=texts.version if texts else None,
        )
        return Written(content, (record,))
