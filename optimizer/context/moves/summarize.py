"""`summarize`: once the previous summary plus the unsummarized old steps pass `over` tokens, an LLM folds
them into a new summary under the guideline's history instruction (ACON history compression).

The summary is shown right after the task and the last `keep_last` steps stay raw. A step is folded only
if every result in it may be (its class is one this move applies to, not pinned, and the contract lets
it be compressed); other steps stay as they are. With `index`, the summary is an index, not the only
copy: every condensed result goes to the recall store and the summary names its handle, tool,
arguments and call id ("offload first, summarize second, keep the original"). ACON keeps no copy.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import ClassVar, Literal

from pydantic import Field

from optimizer.context.contract import Action
from optimizer.context.history import Entry, EntryKind, History, Summarize
from optimizer.context.moves.base import (
    CompressorTexts,
    Condensation,
    HistoryMove,
    StrategyContext,
    already_edited,
    current_summary,
    replay_record,
    step_groups,
)
from optimizer.context.moves.knobs import OVER, SHORT, Knob, Scale, Turn, keep_last
from optimizer.context.quarantine import quarantine
from optimizer.context.recall import RecallStore, restore_must_keep
from optimizer.context.thresholds import KEEP_LAST_RAW, SUMMARY_MAX_TOKENS, T_HIST
from optimizer.context.transcript import render_transcript
from optimizer.errors import ConfigError
from optimizer.world.retention import RetentionClass


class SummarizeOld(HistoryMove):
    """LLM history summarization past a threshold."""

    move: Literal["summarize"] = "summarize"
    action: ClassVar[Action] = Action.COMPRESS
    uses_compressor: ClassVar[bool] = True
    # Below 96 tokens a summary cannot hold the ids of a multi-step task.
    knobs: ClassVar[tuple[Knob, ...]] = (
        OVER,
        keep_last(1),
        Knob("max_tokens", 96, None, "down", (Turn(SHORT, Scale(0.6)),)),
    )
    over: int = Field(T_HIST, gt=0, description="Token threshold on previous summary + unsummarized old steps.")
    keep_last: int = Field(KEEP_LAST_RAW, ge=1, description="Most recent steps kept raw (ACON keeps the last one).")
    max_tokens: int = Field(SUMMARY_MAX_TOKENS, gt=0, description="Completion cap for the summary.")
    index: bool = Field(True, description="Keep condensed results behind recall handles named in the summary.")

    @property
    def offers_recall(self) -> bool:
        return self.index

    def condense(
        self, history: History, ctx: StrategyContext, texts: CompressorTexts | None, pinned: tuple[RetentionClass, ...]
    ) -> Condensation | None:
        groups = unsummarized_groups(history, self.keep_last)
        entries = [e for g in groups if all(self.applies_to(r.retention, pinned) for r in g if r.is_result) for e in g]
        previous = current_summary(history)
        # What the entries take in the context now (an earlier move may have cut them already).
        shown = {e.id: e for e in history.replay()}
        pending = sum(shown.get(e.id, e).tokens for e in entries)
        if not entries or (previous.tokens if previous else 0) + pending <= self.over:
            return None
        if ctx.compressor is None or texts is None:
            raise ConfigError(f"strategy {ctx.strategy!r} needs a compressor endpoint")
        out = ctx.compressor.summarize_history(
            guideline=texts.history,
            task=ctx.task,
            previous_summary=previous.summary if previous else None,
            history=render_transcript(shown.get(e.id, e) for e in entries),
            max_tokens=self.max_tokens,
        )
        covered = tuple(sorted({*(previous.entry_ids if previous else ()), *(e.id for e in entries)}))
        # A summary is read as the agent's own notes: an instruction copied from tool output must not
        # become one of its steps. Skills are instructions by registration and are not searched.
        source = "\n".join(
            [
                previous.summary if previous else "",
                *(
                    shown.get(e.id, e).content
                    for e in entries
                    if e.is_result and e.retention is not RetentionClass.SKILL
                ),
            ]
        )
        summary = quarantine(out.text, source=source, task=ctx.task).text
        # The previous summary went into this one, so its entries' must-keep lines must come out of it too.
        summary = restore_must_keep(summary, [history.entry(i) for i in covered])
        results = [history.entry(i) for i in covered if history.entry(i).is_result]
        index, handles = summary_index(results, ctx.store) if self.index else ("", ())
        edits = (Summarize(covered, summary, index=index),)
        record = replay_record(
            "summarize",
            history,
            edits,
            ctx,
            guideline_version=texts.version,
            handles=handles,
            compressor_usage=out.usage,
            compressor_cached=out.cached,
            compressor_retries=out.retries,
            compressor_io=(out.prompt, out.text) if out.prompt else None,
        )
        return Condensation(edits, (record,))


def summary_index(results: Sequence[Entry], store: RecallStore) -> tuple[str, tuple[str, ...]]:
    """One line per condensed result naming its handle and the call it answered."""
    lines = ["[originals of the summarized results, restore any with recall(handle=...)]"]
    handles = []
    for entry in results:
        handle = store.put(entry)
        handles.append(handle)
        call = entry.call
        args = json.dumps(dict(call.arguments), ensure_ascii=False, sort_keys=True) if call else "{}"
        name, call_id = (call.name, call.id) if call else ("?", "?")
        lines.append(f'- recall(handle="{handle}"): {name}({args}) call_id={call_id}, {entry.tokens} tokens')
    return ("\n".join(lines) if handles else ""), tuple(handles)


def unsummarized_groups(history: History, keep_last: int) -> list[list[Entry]]:
    """Step groups older than the last `keep_last` steps that no edit has touched yet."""
    done = already_edited(history)
    groups = step_groups(history.entries)
    old = groups[: max(0, len(groups) - keep_last)]
    return [g for g in old if not all(e.id in done for e in g) and all(e.kind is not EntryKind.USER for e in g)]
