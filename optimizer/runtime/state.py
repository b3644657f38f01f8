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

from optimizer.context.history import Drop, Edit, Entry, EntryKind, History, Replace, Summarize
from optimizer.context.recall import RecallStore
from optimizer.errors import ConfigError
from optimizer.world.retention import RetentionClass
from optimizer.world.tool import ToolCall

if TYPE_CHECKING:
    from optimizer.runtime.conversation import ContextRuntime, RuntimeStats, _Ingested

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


@dataclasses.dataclass(frozen=True)
class Restored:
    """A saved state read back whole and checked, ready to replace a runtime's own in one move."""

    history: History
    store: RecallStore
    stats: RuntimeStats
    step: int
    turn: int
    action_step: int
    previous_request: list[dict[str, Any]] | None
    seen: _Ingested


class _Broken(Exception):
    """What is wrong with the state, said where; `read_state` turns it into one `ConfigError` line."""


def read_state(runtime: ContextRuntime, data: Any, *, source: str) -> Restored:
    """The state in `data` for `runtime`'s guideline, checked whole before anything of the runtime changes.

    Besides each field's presence and type, it checks what a runtime itself never writes: entries out of
    order, an edit or a handle naming an entry that is not there, a must-keep line missing from its entry
    (every move keeps those lines, so a state without one was edited or damaged).
    """
    if not isinstance(data, Mapping) or data.get("format") != FORMAT:
        raise ConfigError(f"{source}: not a runtime state file (expected format {FORMAT!r})")
    try:
        restored = _read(data)
        version = _field(data, "strategy_version", str)
    except _Broken as exc:
        raise ConfigError(f"{source}: broken runtime state: {exc}") from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:  # a shape the checks above did not name
        raise ConfigError(f"{source}: broken runtime state ({type(exc).__name__}: {exc})") from None
    if version != runtime.strategy.version():
        raise ConfigError(
            f"{source}: saved under guideline version {version}, this runtime runs {runtime.strategy.version()}"
        )
    return restored


def _field(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str = "") -> Any:
    name = f"{where}.{key}" if where else key
    if key not in data:
        raise _Broken(f"missing field {name!r}")
    value = data[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        expected = " or ".join("null" if k is type(None) else k.__name__ for k in kinds)
        raise _Broken(f"{name!r} must be {expected}, not {type(value).__name__}")
    return value


def _read(data: Mapping[str, Any]) -> Restored:
    from optimizer.runtime.conversation import RuntimeStats, _Ingested

    step, turn = _field(data, "step", int), _field(data, "turn", int)
    action_step = _field(data, "action_step", int)
    entries = [_checked_entry(e, f"entries[{i}]") for i, e in enumerate(_field(data, "entries", list))]
    for index, entry in enumerate(entries):
        if entry.id != index:
            raise _Broken(f"entries[{index}] has id {entry.id}: entries must be in order from 0")
    edits = [_read_edit(e) for e in _field(data, "edits", list)]
    for edit in edits:
        ids = (edit.entry_id,) if isinstance(edit, Replace) else edit.entry_ids
        missing = [i for i in ids if not 0 <= i < len(entries)]
        if missing:
            raise _Broken(f"an edit names entry {missing[0]}, which the state does not hold")
    saved_store = _field(data, "store", Mapping)
    store = RecallStore()
    items = _field(saved_store, "items", Mapping, "store")
    store._items = {str(h): _checked_entry(e, f"store.items.{h}") for h, e in items.items()}
    by_entry = _field(saved_store, "by_entry", Mapping, "store")
    for key, handle in by_entry.items():
        entry_id = _int_key(key, "store.by_entry")
        if not 0 <= entry_id < len(entries) or handle not in store._items:
            raise _Broken(f"store.by_entry maps entry {entry_id} to handle {handle!r}, which the state does not hold")
        store._by_entry[entry_id] = handle
    store.recalls = _field(saved_store, "recalls", int, "store")
    store.recalled_tokens = _field(saved_store, "recalled_tokens", int, "store")
    stats_data = _field(data, "stats", Mapping)
    stats = RuntimeStats(**{k: _field(stats_data, k, int, "stats") for k in RuntimeStats().to_dict()})
    previous = _field(data, "previous_request", (list, type(None)))
    if previous is not None and not all(isinstance(m, Mapping) for m in previous):
        raise _Broken("'previous_request' must be a list of messages")
    saved_seen = _field(data, "seen", Mapping)
    seen = _Ingested()
    seen.fingerprints = [str(f) for f in _field(saved_seen, "fingerprints", list, "seen")]
    seen.system = _field(saved_seen, "system", (str, type(None)), "seen")
    seen.calls = {c["id"]: _read_call(c) for c in _field(saved_seen, "calls", list, "seen")}
    seen.answered = {str(a) for a in _field(saved_seen, "answered", list, "seen")}
    texts = _field(saved_seen, "texts", Mapping, "seen")
    seen.texts = {_int_key(k, "seen.texts"): str(v) for k, v in texts.items()}
    return Restored(
        History(entries, edits),
        store,
        stats,
        step,
        turn,
        action_step,
        None if previous is None else list(previous),
        seen,
    )


def _int_key(key: Any, where: str) -> int:
    try:
        return int(key)
    except (TypeError, ValueError):
        raise _Broken(f"{where!r} is keyed by entry ids, not {key!r}") from None


def _checked_entry(data: Any, where: str) -> Entry:
    if not isinstance(data, Mapping):
        raise _Broken(f"{where} must be an object, not {type(data).__name__}")
    try:
        entry = _read_entry(data)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise _Broken(f"{where}: {type(exc).__name__}: {exc}") from None
    for name, kind in (("id", int), ("step", int), ("turn", int), ("tokens", int), ("content", str)):
        value = getattr(entry, name)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise _Broken(f"{where}: {name!r} must be {kind.__name__}, not {type(value).__name__}")
    for line in entry.must_keep:
        if not isinstance(line, str) or line not in entry.content:
            raise _Broken(f"{where}: must_keep line {str(line)[:60]!r} is not in its content")
    return entry


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
