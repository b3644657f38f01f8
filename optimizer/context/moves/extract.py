"""`extract` and `extract_old`: keep, in code, the parts of a result that the guideline's rules select.

No model call: a production user pays nothing per call for it. The original goes to the recall store and
the extract names its handle, so what the rules left out stays one `recall` away. Must-keep lines always
survive. At write time the request terms are the user's words and the agent's calls so far; at history
time (`extract_old`, for results older than `keep_last` steps) the calls made since count too.
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar, Literal

from pydantic import Field

from optimizer.context.contract import Action
from optimizer.context.extraction import Selection, parse_units, render, request_terms, select
from optimizer.context.history import Entry, History, Replace
from optimizer.context.moves.base import (
    CompressorTexts,
    Condensation,
    HistoryMove,
    StrategyContext,
    WriteMove,
    Written,
    clearable,
    replay_record,
    write_record,
)
from optimizer.context.moves.knobs import DISTINCT, OVER, RARE, RARE_FEWER, STRICT, Knob, Scale, Shift, Turn, keep_last
from optimizer.context.recall import recall_note, restore_must_keep
from optimizer.tokens import count_tokens
from optimizer.world.retention import RetentionClass

# A term in a tenth of a result's units still tells them apart; below that, extraction keeps only rule lines.
MIN_TERM_SHARE = 0.1
SELECTION_KNOBS = (
    Knob("min_words", 1, 20, "up", (Turn(STRICT, Shift(1)), Turn(RARE_FEWER, Shift(-1), follows=True))),
    Knob("head", 0, 200, "down", (Turn(STRICT, Shift(1)),)),
    Knob("top_ratio", 0.0, 1.0, "up", (Turn(STRICT, Shift(0.25)),), digits=2),
    Knob("max_term_share", MIN_TERM_SHARE, 1.0, "down", (Turn(DISTINCT, Scale(0.5)),), digits=2),
    Knob(
        "max_word_share", MIN_TERM_SHARE, 1.0, "down", (Turn(RARE, Scale(0.5)), Turn(RARE_FEWER, Scale(0.5))), digits=2
    ),
)
# An extraction's selection knobs, as knobs of the move that holds the selection in `select`.
SELECT_KNOBS = tuple(replace(k, path=f"select.{k.path}") for k in SELECTION_KNOBS)


def extracted(raw: Entry, content: str, history: History, ctx: StrategyContext, selection: Selection) -> str | None:
    """The extract of `content` (a result's text), or None when it would not be shorter."""
    parsed = parse_units(content)
    if not parsed.units:
        return None
    terms = request_terms(history.entries, task=selection.mention_task, calls=selection.mention_calls)
    keep = select(parsed, selection, tool=raw.call.name if raw.call else None, terms=terms, must_keep=raw.must_keep)
    if len(keep) == len(parsed.units):
        return None
    handle = ctx.store.peek(raw)
    reason = f"extracted {len(keep)} of {len(parsed.units)} parts"
    note = recall_note(raw, handle, reason, verb="full result:", advertised=ctx.store.advertised)
    text = restore_must_keep(f"{note}\n{render(parsed, keep)}" if keep else note, [raw])
    return text if count_tokens(text) < count_tokens(content) else None


class Extract(WriteMove):
    """Write time: a fresh result over `over` tokens keeps only what the selection picks."""

    move: Literal["extract"] = "extract"
    action: ClassVar[Action] = Action.COMPRESS
    knobs: ClassVar[tuple[Knob, ...]] = (OVER, *SELECT_KNOBS)
    over: int = Field(400, ge=0, description="Results longer than this many tokens are extracted.")
    select: Selection = Field(default_factory=Selection, description="What to keep.")

    def write(
        self, raw: Entry, current: str, history: History, ctx: StrategyContext, texts: CompressorTexts | None
    ) -> Written | None:
        content = extracted(raw, current, history, ctx, self.select)
        if content is None:
            return None
        handle = ctx.store.put(raw)
        record = write_record(
            "extract",
            raw,
            count_tokens(current),
            count_tokens(content),
            ctx,
            handles=(handle,),
            guideline_version=texts.version if texts else None,
        )
        return Written(content, (record,))


class ExtractOld(HistoryMove):
    """History time: results older than `keep_last` steps (and over `over` tokens) are extracted."""

    move: Literal["extract_old"] = "extract_old"
    action: ClassVar[Action] = Action.COMPRESS
    cuts: ClassVar[bool] = True
    knobs: ClassVar[tuple[Knob, ...]] = (OVER, keep_last(1), *SELECT_KNOBS)
    keep_last: int = Field(2, ge=1, description="Most recent steps whose results stay as written.")
    over: int = Field(200, ge=0, description="Only results longer than this many tokens.")
    select: Selection = Field(default_factory=Selection, description="What to keep.")

    def condense(
        self, history: History, ctx: StrategyContext, texts: CompressorTexts | None, pinned: tuple[RetentionClass, ...]
    ) -> Condensation | None:
        done = history.edited()
        latest = history.latest_reads()
        groups = history.step_groups()
        edits: list[Replace] = []
        handles: list[str] = []
        for group in groups[: max(0, len(groups) - self.keep_last)]:
            for entry in group:
                if entry.id in done or entry.tokens <= self.over or not self.applies_to(entry.retention, pinned):
                    continue
                if not clearable(entry, latest_ids=latest):
                    continue  # the latest state read stays whole, as the contract keeps it
                content = extracted(entry, entry.content, history, ctx, self.select)
                if content is None:
                    continue
                handles.append(ctx.store.put(entry))
                edits.append(Replace(entry.id, content))
        if not edits:
            return None
        record = replay_record(
            "extract", history, edits, ctx, handles=tuple(handles), guideline_version=texts.version if texts else None
        )
        return Condensation(tuple(edits), (record,))
