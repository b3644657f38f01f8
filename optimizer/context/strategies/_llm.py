"""LLM compression steps shared by `llm_history`, `llm_observation` and `guideline`.

Must-keep lines are enforced here, in code: whatever the compressor writes, a runtime-vouched error
line, page warning or receipt line that went into it comes back out of it.
"""

from __future__ import annotations

from collections.abc import Sequence

from optimizer.context.history import Entry, EntryKind, History, Summarize
from optimizer.context.record import CompressionRecord
from optimizer.context.strategies.base import Condensation, StrategyContext, Written, replay_record
from optimizer.context.transcript import render_transcript
from optimizer.errors import ConfigError
from optimizer.tokens import count_tokens


def restore_must_keep(text: str, entries: Sequence[Entry]) -> str:
    missing = [line for e in entries for line in e.must_keep if line not in text]
    if not missing:
        return text
    return text.rstrip() + "\n" + "\n".join(dict.fromkeys(missing))


def current_summary(history: History) -> str | None:
    for edit in reversed(history.edits):
        if isinstance(edit, Summarize):
            return edit.summary
    return None


def summarize(
    history: History, ctx: StrategyContext, entries: Sequence[Entry], *, guideline: str, max_tokens: int,
    strategy: str, version: str, extra_edits: Sequence = (),
) -> Condensation:
    """Fold `entries` (and the previous summary) into a new summary that supersedes the old one."""
    if ctx.compressor is None:
        raise ConfigError(f"strategy {strategy!r} needs a compressor endpoint")
    previous = current_summary(history)
    out = ctx.compressor.summarize_history(
        guideline=guideline, task=ctx.task, previous_summary=previous,
        history=render_transcript(entries), max_tokens=max_tokens,
    )
    already = next((e.entry_ids for e in reversed(history.edits) if isinstance(e, Summarize)), ())
    covered = tuple(sorted({*already, *(e.id for e in entries)}))
    # The previous summary went into this one, so its entries' must-keep lines must come out of it too.
    summary = restore_must_keep(out.text, [history.entry(i) for i in covered])
    edits = [*extra_edits, Summarize(covered, summary)]
    record = replay_record(
        strategy, "summarize", history, edits, ctx, guideline_version=version,
        compressor_usage=out.usage, compressor_cached=out.cached, compressor_retries=out.retries,
        compressor_io=(out.prompt, out.text) if out.prompt else None,
    )
    return Condensation(tuple(edits), (record,))


def compress_observation(
    raw: Entry, history: History, ctx: StrategyContext, *, guideline: str, max_tokens: int,
    strategy: str, version: str,
) -> Written:
    if ctx.compressor is None:
        raise ConfigError(f"strategy {strategy!r} needs a compressor endpoint")
    tool = raw.call.name if raw.call else "?"
    out = ctx.compressor.compress_observation(
        guideline=guideline, task=ctx.task, tool=tool, observation=raw.content, max_tokens=max_tokens
    )
    content = restore_must_keep(out.text, [raw])
    if count_tokens(content) >= raw.tokens:
        content = raw.content  # a "compression" that grew the result is not applied
    after = count_tokens(content)
    record = CompressionRecord(
        strategy=strategy, stage="write", step=ctx.step, action="compress", entry_ids=(raw.id,),
        tokens_before=raw.tokens, tokens_after=after,
        dropped_by_class={str(raw.retention or "unknown"): max(0, raw.tokens - after)},
        guideline_version=version, compressor_usage=out.usage, compressor_cached=out.cached,
        compressor_retries=out.retries, compressor_io=(out.prompt, out.text) if out.prompt else None,
    )
    return Written(content, record)


def unsummarized_groups(history: History, keep_last: int) -> list[list[Entry]]:
    """Step groups older than the last `keep_last` steps that no edit has touched yet."""
    from optimizer.context.strategies.base import already_edited, step_groups

    done = already_edited(history)
    groups = step_groups(history.entries)
    old = groups[: max(0, len(groups) - keep_last)]
    return [g for g in old if not all(e.id in done for e in g) and all(e.kind is not EntryKind.USER for e in g)]
