"""Plain-text rendering of history entries, for compressor and optimizer prompts."""

from __future__ import annotations

import json
from collections.abc import Iterable

from optimizer.context.history import Entry, EntryKind


def render_entry(entry: Entry) -> str:
    if entry.kind is EntryKind.TASK:
        return f"USER (task):\n{entry.content}"
    if entry.kind is EntryKind.USER:
        return f"USER:\n{entry.content}"
    if entry.kind is EntryKind.SUMMARY:
        return f"SUMMARY OF EARLIER STEPS:\n{entry.content}"
    if entry.kind is EntryKind.NOTICE:
        return f"HARNESS NOTICE:\n{entry.content}"
    if entry.kind is EntryKind.ACTION:
        if entry.answer is not None:
            return f"ASSISTANT (step {entry.step}) final answer:\n{entry.answer}"
        calls = "; ".join(
            f"{c.name}({json.dumps(dict(c.arguments), ensure_ascii=False, sort_keys=True)}) [call_id={c.id}]"
            for c in entry.calls
        )
        return f"ASSISTANT (step {entry.step}) called: {calls}"
    call = entry.call
    head = f"TOOL RESULT of {call.name} [call_id={call.id}]" if call else "TOOL RESULT"
    if entry.is_error:
        head += " (error)"
    return f"{head}:\n{entry.content}"


def render_transcript(entries: Iterable[Entry]) -> str:
    return "\n\n".join(render_entry(e) for e in entries)
