"""The runtime's state as JSON: history entries, edits, the recall store and the counters.

A restored runtime continues the conversation exactly where the saved one stopped: same handles, same
summaries (never recomputed), same previous request for cache-break accounting. The guideline itself is
not saved, only its version: loading under another guideline is refused, since its edits would not be
the ones that guideline makes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Protocol

from optimizer.context.history import Drop, Edit, Entry, EntryKind, History, Replace, Summarize
from optimizer.context.recall import RecallStore, StoreSnapshot
from optimizer.errors import ConfigError
from optimizer.runtime.messages import SeenMessages
from optimizer.world.retention import RetentionClass
from optimizer.world.tool import ToolCall

FORMAT = "acon-runtime-state/1"


@dataclasses.dataclass
class RuntimeStats:
    """What the runtime did to the conversation so far."""

    requests: int = 0
    compressor_calls: int = 0  # uncached calls the runtime's moves made
    compressions: int = 0  # records of moves that changed content
    cache_breaks: int = 0  # requests whose prefix differed from the previous request's
    recalls: int = 0

    def to_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class RuntimeState:
    """Everything of a runtime that a saved state holds, as one record.

    A runtime hands out its live parts (`ContextRuntime.state`, written out at once) and takes over those
    of a state read back whole and checked (`read_state`), in one move.
    """

    strategy_version: str
    history: History
    store: RecallStore
    stats: RuntimeStats
    step: int  # the step of the next request
    turn: int
    action_step: int  # the step of the latest action: its results are written under it
    previous_request: list[dict[str, Any]] | None
    seen: SeenMessages


class Stateful(Protocol):
    """What `dump_state` reads: a `ContextRuntime` (named by its method, since the runtime imports this module)."""

    def state(self) -> RuntimeState: ...


def dump_state(runtime: Stateful) -> dict[str, Any]:
    """The runtime's state as the JSON `ContextRuntime.save` writes."""
    state = runtime.state()
    seen = state.seen
    store = state.store.snapshot()
    return {
        "format": FORMAT,
        "strategy_version": state.strategy_version,
        "step": state.step,
        "turn": state.turn,
        "action_step": state.action_step,
        "entries": [_entry(e) for e in state.history.entries],
        "edits": [_edit(e) for e in state.history.edits],
        "store": {
            "items": {h: _entry(e) for h, e in store.items.items()},
            "by_entry": {str(k): v for k, v in store.by_entry.items()},
            "recalls": store.recalls,
            "recalled_tokens": store.recalled_tokens,
        },
        "stats": state.stats.to_dict(),
        "previous_request": state.previous_request,
        "seen": {
            "fingerprints": seen.fingerprints,
            "system": seen.system,
            "calls": [c.to_dict() for c in seen.calls.values()],
            "answered": sorted(seen.answered),
            "texts": {str(k): v for k, v in seen.texts.items()},
        },
    }


class _Broken(Exception):
    """What is wrong with the state, said where; `read_state` turns it into one `ConfigError` line."""


def read_state(data: Any, *, source: str, strategy_version: str) -> RuntimeState:
    """The state in `data`, for a runtime whose guideline has `strategy_version`, checked whole.

    Besides each field's presence and type, it checks what a runtime itself never writes: entries out of
    order, an edit or a handle naming an entry that is not there, a must-keep line missing from its entry
    (every move keeps those lines, so a state without one was edited or damaged).
    """
    if not isinstance(data, Mapping) or data.get("format") != FORMAT:
        raise ConfigError(f"{source}: not a runtime state file (expected format {FORMAT!r})")
    try:
        state = _read(data)
    except _Broken as exc:
        raise ConfigError(f"{source}: broken runtime state: {exc}") from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:  # a shape the checks above did not name
        raise ConfigError(f"{source}: broken runtime state ({type(exc).__name__}: {exc})") from None
    if state.strategy_version != strategy_version:
        raise ConfigError(
            f"{source}: saved under guideline version {state.strategy_version}, this runtime runs {strategy_version}"
        )
    return state


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


def _read(data: Mapping[str, Any]) -> RuntimeState:
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
    store = _read_store(_field(data, "store", Mapping), len(entries))
    stats_data = _field(data, "stats", Mapping)
    stats = RuntimeStats(**{k: _field(stats_data, k, int, "stats") for k in RuntimeStats().to_dict()})
    previous = _field(data, "previous_request", (list, type(None)))
    if previous is not None and not all(isinstance(m, Mapping) for m in previous):
        raise _Broken("'previous_request' must be a list of messages")
    saved_seen = _field(data, "seen", Mapping)
    fingerprints = [str(f) for f in _field(saved_seen, "fingerprints", list, "seen")]
    system = _field(saved_seen, "system", (str, type(None)), "seen")
    calls = {c["id"]: _read_call(c) for c in _field(saved_seen, "calls", list, "seen")}
    answered = {str(a) for a in _field(saved_seen, "answered", list, "seen")}
    texts = {_int_key(k, "seen.texts"): str(v) for k, v in _field(saved_seen, "texts", Mapping, "seen").items()}
    seen = SeenMessages(fingerprints, system, calls, answered, texts)
    return RuntimeState(
        strategy_version=_field(data, "strategy_version", str),
        history=History(entries, edits),
        store=store,
        stats=stats,
        step=step,
        turn=turn,
        action_step=action_step,
        previous_request=None if previous is None else list(previous),
        seen=seen,
    )


def _read_store(saved: Mapping[str, Any], entries: int) -> RecallStore:
    items = {str(h): _checked_entry(e, f"store.items.{h}") for h, e in _field(saved, "items", Mapping, "store").items()}
    by_entry = {}
    for key, handle in _field(saved, "by_entry", Mapping, "store").items():
        entry_id = _int_key(key, "store.by_entry")
        if not 0 <= entry_id < entries or handle not in items:
            raise _Broken(f"store.by_entry maps entry {entry_id} to handle {handle!r}, which the state does not hold")
        by_entry[entry_id] = handle
    recalls = _field(saved, "recalls", int, "store")
    recalled_tokens = _field(saved, "recalled_tokens", int, "store")
    return RecallStore.restored(StoreSnapshot(items, by_entry, recalls, recalled_tokens))


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
