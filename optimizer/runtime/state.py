"""The runtime's state as JSON: history entries, edits, the recall store and the counters.

A restored runtime continues the conversation exactly where the saved one stopped: same handles, same
summaries (never recomputed), same previous request for cache-break accounting. The guideline itself is
not saved, only its version: loading under another guideline is refused, since its edits would not be
the ones that guideline makes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from optimizer.context.history import Drop, Edit, Entry, EntryKind, Replace, Summarize
from optimizer.errors import ConfigError
from optimizer.world.retention import RetentionClass
from optimizer.world.tool import ToolCall

if TYPE_CHECKING:
    from optimizer.runtime.conversation import ContextRuntime

FORMAT = "acon-runtime-state/1"


def dump_state(runtime: ContextRuntime) -> dict[str, Any]:
    seen = runtime._seen
    store = runtime.store
    return {
        "format": FORMAT,
        "strategy_version": runtime.strategy.version(),
        "step": runtime.step,
        "turn": runtime.turn,
        "action_step": runtime._action_step,
        "entries": [_entry(e) for e in runtime.history.entries],
        "edits": [_edit(e) for e in runtime.history.edits],
        "store": {
            "items": {h: _entry(e) for h, e in store._items.items()},
            "by_entry": {str(k): v for k, v in store._by_entry.items()},
            "recalls": store.recalls,
            "recalled_tokens": store.recalled_tokens,
        },
        "stats": runtime.stats.to_dict(),
        "previous_request": runtime._previous_request,
        "seen": {
            "fingerprints": seen.fingerprints,
            "system": seen.system,
            "calls": [c.to_dict() for c in seen.calls.values()],
            "answered": sorted(seen.answered),
            "texts": {str(k): v for k, v in seen.texts.items()},
        },
    }


def restore_state(runtime: ContextRuntime, data: Any, *, source: str) -> None:
    from optimizer.runtime.conversation import RuntimeStats

    if not isinstance(data, Mapping) or data.get("format") != FORMAT:
        raise ConfigError(f"{source}: not a runtime state file (expected format {FORMAT!r})")
    if data["strategy_version"] != runtime.strategy.version():
        raise ConfigError(
            f"{source}: saved under guideline version {data['strategy_version']}, this runtime runs "
            f"{runtime.strategy.version()}"
        )
    try:
        runtime.history.entries = [_read_entry(e) for e in data["entries"]]
        runtime.history.edits = [_read_edit(e) for e in data["edits"]]
        store = runtime.store
        store._items = {h: _read_entry(e) for h, e in data["store"]["items"].items()}
        store._by_entry = {int(k): v for k, v in data["store"]["by_entry"].items()}
        store.recalls, store.recalled_tokens = data["store"]["recalls"], data["store"]["recalled_tokens"]
        runtime.stats = RuntimeStats(**data["stats"])
        runtime.step, runtime.turn, runtime._action_step = data["step"], data["turn"], data["action_step"]
        runtime._previous_request = data["previous_request"]
        seen = data["seen"]
        runtime._seen.fingerprints = list(seen["fingerprints"])
        runtime._seen.system = seen["system"]
        runtime._seen.calls = {c["id"]: ToolCall(c["id"], c["name"], c["arguments"]) for c in seen["calls"]}
        runtime._seen.answered = set(seen["answered"])
        runtime._seen.texts = {int(k): v for k, v in seen["texts"].items()}
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{source}: broken runtime state ({type(exc).__name__}: {exc})") from None


def _entry(entry: Entry) -> dict[str, Any]:
    data = dataclasses.asdict(entry)
    data["kind"] = entry.kind.value
    data["retention"] = entry.retention.value if entry.retention else None
    data["calls"] = [c.to_dict() for c in entry.calls]
    data["call"] = entry.call.to_dict() if entry.call else None
    data["must_keep"] = list(entry.must_keep)
    return data


def _read_call(data: Mapping[str, Any]) -> ToolCall:
    return ToolCall(data["id"], data["name"], dict(data["arguments"]))


def _read_entry(data: Mapping[str, Any]) -> Entry:
    fields = dict(data)
    fields["kind"] = EntryKind(fields["kind"])
    fields["retention"] = RetentionClass(fields["retention"]) if fields["retention"] else None
    fields["calls"] = tuple(_read_call(c) for c in fields["calls"])
    fields["call"] = _read_call(fields["call"]) if fields["call"] else None
    fields["must_keep"] = tuple(fields["must_keep"])
    return Entry(**fields)


def _edit(edit: Edit) -> dict[str, Any]:
    if isinstance(edit, Replace):
        return {"type": "replace", "entry_id": edit.entry_id, "content": edit.content, "tokens": edit.tokens}
    if isinstance(edit, Summarize):
        return {
            "type": "summarize",
            "entry_ids": list(edit.entry_ids),
            "summary": edit.summary,
            "tokens": edit.tokens,
            "index": edit.index,
        }
    return {"type": "drop", "entry_ids": list(edit.entry_ids)}


def _read_edit(data: Mapping[str, Any]) -> Edit:
    kind = data["type"]
    if kind == "replace":
        return Replace(data["entry_id"], data["content"], data["tokens"])
    if kind == "summarize":
        return Summarize(tuple(data["entry_ids"]), data["summary"], data["tokens"], data["index"])
    if kind == "drop":
        return Drop(tuple(data["entry_ids"]))
    raise ValueError(f"unknown edit type {kind!r}")
