"""The episode history: append-only entries plus the edits strategies recorded against them.

Nothing is ever edited in place. A strategy that masks, clears or summarizes appends an `Edit`; the
context actually sent is rebuilt by replaying every edit over the written entries. So the history as
written (checkpoint 2) and as replayed (checkpoint 3) both stay available for the provenance diff.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from optimizer.tokens import count_tokens
from optimizer.world.retention import RetentionClass
from optimizer.world.tool import ToolCall


class EntryKind(StrEnum):
    TASK = "task"  # the first user message: never dropped
    USER = "user"  # a later user turn
    ACTION = "action"  # an assistant step: tool calls, or a final answer
    RESULT = "result"  # one tool result, paired with the call it answers
    SUMMARY = "summary"  # produced by replay only: a history summary standing in for entries
    NOTICE = "notice"  # harness feedback to the agent (a malformed action, an unknown tool)


@dataclass(frozen=True)
class Entry:
    id: int
    kind: EntryKind
    content: str
    step: int
    turn: int
    calls: tuple[ToolCall, ...] = ()  # ACTION: the calls made
    answer: str | None = None  # ACTION: a final answer
    call: ToolCall | None = None  # RESULT: the call answered
    retention: RetentionClass | None = None  # RESULT: class from registration and runtime status
    must_keep: tuple[str, ...] = ()  # RESULT: runtime-vouched lines that survive every cut
    is_error: bool = False
    recalled_handle: str | None = None  # RESULT of a recall: which handle it restored
    tokens: int = 0

    @property
    def is_result(self) -> bool:
        return self.kind is EntryKind.RESULT


@dataclass(frozen=True)
class Replace:
    """Show `content` instead of the entry's written content (a mask, placeholder or rewrite)."""

    entry_id: int
    content: str
    tokens: int = -1

    def __post_init__(self) -> None:
        if self.tokens < 0:
            object.__setattr__(self, "tokens", count_tokens(self.content))


@dataclass(frozen=True)
class Summarize:
    """Drop `entry_ids` and show `summary` right after the task; a later summary supersedes it.

    `index` names the recall handles of the results the summary condensed (the originals stay
    retrievable); it is shown after the summary but is not the compressor's text.
    """

    entry_ids: tuple[int, ...]
    summary: str
    tokens: int = -1
    index: str = ""

    def __post_init__(self) -> None:
        if self.tokens < 0:
            object.__setattr__(self, "tokens", count_tokens(self.shown))

    @property
    def shown(self) -> str:
        return f"{self.summary}\n{self.index}" if self.index else self.summary


@dataclass(frozen=True)
class Drop:
    """Remove entries from the view outright (FIFO windows); nothing stands in for them."""

    entry_ids: tuple[int, ...]


Edit = Replace | Summarize | Drop


@dataclass
class History:
    entries: list[Entry] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)

    def draft(self, kind: EntryKind, content: str, *, step: int, turn: int, **fields: object) -> Entry:
        """The entry that `append` would add next, without adding it (write-time stages see this)."""
        return Entry(
            id=len(self.entries),
            kind=kind,
            content=content,
            step=step,
            turn=turn,
            tokens=count_tokens(content),
            **fields,  # type: ignore[arg-type]
        )

    def add(self, entry: Entry) -> Entry:
        """Append an entry made by `draft` (its id must still be the next one)."""
        if entry.id != len(self.entries):
            raise ValueError(f"entry {entry.id} was drafted for another position ({len(self.entries)})")
        self.entries.append(entry)
        return entry

    def append(self, kind: EntryKind, content: str, *, step: int, turn: int, **fields: object) -> Entry:
        entry = self.draft(kind, content, step=step, turn=turn, **fields)
        self.entries.append(entry)
        return entry

    def extend_edits(self, edits: Iterable[Edit]) -> None:
        self.edits.extend(edits)

    def entry(self, entry_id: int) -> Entry:
        return self.entries[entry_id]

    def steps(self) -> list[int]:
        return sorted({e.step for e in self.entries if e.kind in (EntryKind.ACTION, EntryKind.RESULT)})

    def replay(self) -> list[Entry]:
        """Checkpoint 3: the entries as the agent will see them, every edit applied in order."""
        return replay(self.entries, self.edits)


def replay(entries: Sequence[Entry], edits: Sequence[Edit]) -> list[Entry]:
    replaced: dict[int, Replace] = {}
    summarized: set[int] = set()
    summary: Summarize | None = None
    for edit in edits:
        if isinstance(edit, Replace):
            replaced[edit.entry_id] = edit
        elif isinstance(edit, Drop):
            summarized.update(edit.entry_ids)
        else:
            summarized.update(edit.entry_ids)
            summary = edit
    view: list[Entry] = []
    for entry in entries:
        if entry.id in summarized:
            continue
        if entry.id in replaced:
            edit = replaced[entry.id]
            entry = dataclasses.replace(entry, content=edit.content, tokens=edit.tokens)
        view.append(entry)
        if entry.kind is EntryKind.TASK and summary is not None:
            view.append(
                Entry(id=-1, kind=EntryKind.SUMMARY, content=summary.shown, step=-1, turn=0, tokens=summary.tokens)
            )
    return view


def view_tokens(view: Iterable[Entry]) -> int:
    return sum(entry.tokens for entry in view)
