"""Recoverable clearing: cleared and offloaded content stays retrievable by handle."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from optimizer.context.history import Entry
from optimizer.world.tool import ToolSpec

RECALL_TOOL = "recall"

# When a guideline that can clear recoverably lists `recall` among the agent's tools. `once_cleared`: from the
# first request that shows a handle (before that the tool is of no use, and listing it is not free: with it
# listed, the 1.5B local agent answered some tasks at step 0, before any compression, with invented values;
# benchmarks/results/recall_listing.json). `always`: from the first request, as acon listed it before. `never`:
# not at all, and placeholders name what was cut without a handle to restore it (as SWE-agent's masking and
# Anthropic's `clear_tool_uses` do): for an agent that does not recall, what is cut is gone either way, and a tool
# it cannot use is a distraction.
RecallListing = Literal["once_cleared", "always", "never"]

RECALL_SPEC = ToolSpec(
    name=RECALL_TOOL,
    description="Restore the full content of an earlier tool result that was cleared from the context. "
    "Pass the handle shown in its placeholder.",
    parameters={
        "type": "object",
        "properties": {"handle": {"type": "string", "description": "Handle from a placeholder, e.g. h3."}},
        "required": ["handle"],
    },
)


@dataclass(frozen=True)
class StoreSnapshot:
    """A store's content at one moment, as a saved runtime state holds it."""

    items: Mapping[str, Entry]  # handle -> the original entry
    by_entry: Mapping[int, str]  # entry id -> its handle
    recalls: int
    recalled_tokens: int


@dataclass
class RecallStore:
    """Per-episode store. Handles are issued in order, so episodes replay deterministically.

    `advertised`: whether placeholders tell the agent how to restore what they stand for (False when the
    guideline never offers `recall`: the store still keeps the originals, for the records)."""

    _items: dict[str, Entry] = field(default_factory=dict)
    _by_entry: dict[int, str] = field(default_factory=dict)
    recalls: int = 0
    recalled_tokens: int = 0
    advertised: bool = True

    def put(self, entry: Entry) -> str:
        if entry.id in self._by_entry:
            return self._by_entry[entry.id]
        handle = f"h{len(self._items) + 1}"
        self._items[handle] = entry
        self._by_entry[entry.id] = handle
        return handle

    def peek(self, entry: Entry) -> str:
        """The handle `put(entry)` would return, without storing anything yet."""
        return self._by_entry.get(entry.id, f"h{len(self._items) + 1}")

    def get(self, handle: str) -> Entry | None:
        return self._items.get(handle)

    def handle_of(self, entry_id: int) -> str | None:
        return self._by_entry.get(entry_id)

    def __contains__(self, handle: str) -> bool:
        return handle in self._items

    def __len__(self) -> int:
        return len(self._items)

    def snapshot(self) -> StoreSnapshot:
        return StoreSnapshot(dict(self._items), dict(self._by_entry), self.recalls, self.recalled_tokens)

    @classmethod
    def restored(cls, snapshot: StoreSnapshot) -> RecallStore:
        """The store a snapshot was taken of: the same handles, and the next one issued after them."""
        return cls(dict(snapshot.items), dict(snapshot.by_entry), snapshot.recalls, snapshot.recalled_tokens)


def recall_note(entry: Entry, handle: str, reason: str, *, verb: str = "restore with", advertised: bool = True) -> str:
    """One line naming tool, arguments, call id, size and handle: what an agent needs to decide to recall (without
    the handle when recall is not offered)."""
    call = entry.call
    tool = call.name if call else "?"
    args = json.dumps(dict(call.arguments), ensure_ascii=False, sort_keys=True) if call else "{}"
    call_id = call.id if call else "?"
    named = f"[{reason}: result of {tool}({args}) call_id={call_id}, {entry.tokens} tokens"
    return f'{named}; {verb} recall(handle="{handle}")]' if advertised else f"{named}]"


def placeholder(
    entry: Entry, handle: str, *, reason: str = "cleared", preview: str = "", advertised: bool = True
) -> str:
    """Placeholder naming tool, arguments, call id and handle; must-keep lines survive verbatim."""
    lines = [recall_note(entry, handle, reason, advertised=advertised)]
    if preview:
        lines.append(preview)
    for line in entry.must_keep:
        if line not in preview:
            lines.append(line)
    return "\n".join(lines)


def restore_must_keep(text: str, entries: Sequence[Entry]) -> str:
    """`text` with every runtime-vouched line of `entries` that it lost appended, whatever cut it."""
    missing = [line for e in entries for line in e.must_keep if line not in text]
    if not missing:
        return text
    return text.rstrip() + "\n" + "\n".join(dict.fromkeys(missing))
