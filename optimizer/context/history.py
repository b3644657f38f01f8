"""The episode history: append-only entries plus the edits strategies recorded against them.

Nothing is ever edited in place. A strategy that masks, clears or summarizes appends an `Edit`; the
context actually sent is rebuilt by replaying every edit over the written entries. So the history as
written (checkpoint 2) and as replayed (checkpoint 3) both stay available for the provenance diff.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from enum import StrEnum
from typing import cast

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
    # Both lists only grow, so the replayed view of their prefix is extended rather than rebuilt: a request
    # costs what is new in the conversation, not its length.
    _view: _ReplayedView | _EditedView | None = field(default=None, init=False, repr=False, compare=False)
    _latest: _LatestReads | None = field(default=None, init=False, repr=False, compare=False)
    _groups: _StepGroups | None = field(default=None, init=False, repr=False, compare=False)
    # A move weighs the same placeholder for the same entry at every request until it is worth making.
    _tokens: dict[str, int] = field(default_factory=dict, init=False, repr=False, compare=False)

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

    def with_edits(self, edits: Sequence[Edit]) -> History:
        """These entries with `edits` recorded after this history's own (this history is left as it is).

        Such a history is read within one request and dropped (by a move's next move, by a move's record):
        `Replace` edits are laid over this history's view rather than copying it whole.
        """
        extended = History(self.entries, [*self.edits, *edits])
        extended._view = self._replayed().extended(self.entries, extended.edits, edits)
        extended._latest = self._latest  # read from the entries alone, which are shared
        extended._groups = self._groups
        extended._tokens = self._tokens
        return extended

    def replacement(self, entry_id: int, content: str) -> Replace:
        """A `Replace` edit, its text tokenized once however often a move proposes it."""
        tokens = self._tokens.get(content)
        if tokens is None:
            tokens = self._tokens[content] = count_tokens(content)
        return Replace(entry_id, content, tokens)

    def entry(self, entry_id: int) -> Entry:
        return self.entries[entry_id]

    def steps(self) -> list[int]:
        return sorted({e.step for e in self.entries if e.kind in (EntryKind.ACTION, EntryKind.RESULT)})

    def replay(self) -> list[Entry]:
        """Checkpoint 3: the entries as the agent will see them, every edit applied in order."""
        return list(self._replayed().view)

    def view(self) -> list[Entry]:
        """`replay()` without the copy: the history's own list, read only, changed by the next edit or entry."""
        return self._replayed().view

    def shown(self, entry_id: int) -> Entry | None:
        """Entry `entry_id` as replayed (-1: the history summary), or None when no longer shown."""
        return self._replayed().shown(entry_id)

    def view_tokens(self) -> int:
        """Tokens of the replayed view."""
        return self._replayed().tokens

    def edited(self) -> AbstractSet[int]:
        """Ids of the entries some edit replaced, summarized or dropped (read only: kept up to date here)."""
        return self._replayed().edited

    def position(self, entry_id: int) -> int | None:
        """Where entry `entry_id` is in the replayed view, None when it is not shown."""
        return self._replayed().position.get(entry_id)

    def last_results(self, count: int) -> list[int]:
        """Ids of the last `count` tool results the replayed view shows."""
        results = self._replayed().results
        return results[max(0, len(results) - count) :]

    def unedited_results(self) -> list[int]:
        """Ids of the results the replayed view shows as written, in order (those no edit has rewritten yet)."""
        return sorted(self._replayed().unedited)

    def latest_reads(self) -> AbstractSet[int]:
        """Ids of the most recent result of each distinct call (for classes whose latest value is kept)."""
        if self._latest is None or not self._latest.extends(self.entries):
            self._latest = _LatestReads()
        return self._latest.catch_up(self.entries)

    def step_groups(self) -> Sequence[Sequence[Entry]]:
        """Actions, results and notices grouped by agent step, in step order (kept by the history: read only)."""
        if self._groups is None or not self._groups.extends(self.entries):
            self._groups = _StepGroups()
        return self._groups.catch_up(self.entries)

    def _replayed(self) -> _ReplayedView | _EditedView:
        if self._view is None or not self._view.extends(self.entries, self.edits):
            self._view = _ReplayedView()
        self._view.catch_up(self.entries, self.edits)
        return self._view


def replay(entries: Sequence[Entry], edits: Sequence[Edit]) -> list[Entry]:
    replaced, summarized, summary = _fold(edits)
    view: list[Entry] = []
    for entry in entries:
        if entry.id in summarized:
            continue
        if entry.id in replaced:
            edit = replaced[entry.id]
            entry = dataclasses.replace(entry, content=edit.content, tokens=edit.tokens)
        view.append(entry)
        if entry.kind is EntryKind.TASK and summary is not None:
            view.append(_summary_entry(summary))
    return view


def _fold(edits: Iterable[Edit]) -> tuple[dict[int, Replace], set[int], Summarize | None]:
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
    return replaced, summarized, summary


def _summary_entry(summary: Summarize) -> Entry:
    return Entry(id=-1, kind=EntryKind.SUMMARY, content=summary.shown, step=-1, turn=0, tokens=summary.tokens)


class _Prefix:
    """Which prefix of an append-only list a cache has read: its length and its last element."""

    def __init__(self) -> None:
        self.length = 0
        self.last: object = None

    def extended_by(self, items: Sequence[object]) -> bool:
        return len(items) >= self.length and (self.length == 0 or items[self.length - 1] is self.last)

    def read(self, items: Sequence[object]) -> None:
        self.length = len(items)
        self.last = items[-1] if items else None


class _ReplayedView:
    """`replay(entries, edits)` for the prefix read so far, extended in place as both lists grow.

    A new `Replace` changes one shown entry; a new `Summarize` or `Drop` (rare: a model call made it) is
    replayed from scratch, which is what `replay` does for every request.
    """

    def __init__(self) -> None:
        self.entries = _Prefix()
        self.edits = _Prefix()
        self.replaced: dict[int, Replace] = {}
        self.summarized: set[int] = set()
        self.summary: Summarize | None = None
        self.view: list[Entry] = []
        self.position: dict[int, int] = {}  # entry id (-1: the summary) -> index in `view`
        self.tokens = 0
        self.results: list[int] = []  # ids of the results shown, in order
        self.unedited: set[int] = set()  # ids of the results shown with their written content
        self.edited: set[int] = set()  # ids any edit names

    def extends(self, entries: Sequence[Entry], edits: Sequence[Edit]) -> bool:
        return self.entries.extended_by(entries) and self.edits.extended_by(edits)

    def extended(
        self, entries: Sequence[Entry], edits: Sequence[Edit], new: Sequence[Edit]
    ) -> _ReplayedView | _EditedView:
        """The view of `entries` and `edits`, which are those read plus `new`."""
        if all(isinstance(edit, Replace) for edit in new):
            return _EditedView(self, entries, edits, cast("Sequence[Replace]", new))
        return self.fork()  # caught up with `new` when it is read

    def fork(self) -> _ReplayedView:
        copy = _ReplayedView()
        copy.entries.length, copy.entries.last = self.entries.length, self.entries.last
        copy.edits.length, copy.edits.last = self.edits.length, self.edits.last
        copy.replaced, copy.summarized, copy.summary = dict(self.replaced), set(self.summarized), self.summary
        copy.view, copy.position, copy.tokens = list(self.view), dict(self.position), self.tokens
        copy.results, copy.unedited, copy.edited = list(self.results), set(self.unedited), set(self.edited)
        return copy

    def shown(self, entry_id: int) -> Entry | None:
        index = self.position.get(entry_id)
        return None if index is None else self.view[index]

    def catch_up(self, entries: Sequence[Entry], edits: Sequence[Edit]) -> None:
        new_edits = edits[self.edits.length :]
        if any(not isinstance(edit, Replace) for edit in new_edits):
            self._rebuild(entries, edits)
            return
        for edit in cast("Sequence[Replace]", new_edits):
            self.replaced[edit.entry_id] = edit
            self.edited.add(edit.entry_id)
            index = self.position.get(edit.entry_id)
            if index is not None:  # shown already; a later entry takes its edit when it arrives
                old, written = self.view[index], entries[edit.entry_id]
                self.view[index] = dataclasses.replace(written, content=edit.content, tokens=edit.tokens)
                self.tokens += edit.tokens - old.tokens
                if written.kind is EntryKind.RESULT and edit.content != written.content:
                    self.unedited.discard(written.id)
                elif written.kind is EntryKind.RESULT:
                    self.unedited.add(written.id)
        self._append(entries[self.entries.length :])
        self.entries.read(entries)
        self.edits.read(edits)

    def _rebuild(self, entries: Sequence[Entry], edits: Sequence[Edit]) -> None:
        self.replaced, self.summarized, self.summary = _fold(edits)
        self.edited = set(self.replaced) | self.summarized
        self.view, self.position, self.tokens = [], {}, 0
        self.results, self.unedited = [], set()
        self._append(entries)
        self.entries.read(entries)
        self.edits.read(edits)

    def _append(self, entries: Iterable[Entry]) -> None:
        for entry in entries:
            if entry.id in self.summarized:
                continue
            edit = self.replaced.get(entry.id)
            if entry.kind is EntryKind.RESULT:
                self.results.append(entry.id)
                if edit is None or edit.content == entry.content:
                    self.unedited.add(entry.id)
            if edit is not None:
                entry = dataclasses.replace(entry, content=edit.content, tokens=edit.tokens)
            self._show(entry)
            if entry.kind is EntryKind.TASK and self.summary is not None:
                self._show(_summary_entry(self.summary))

    def _show(self, entry: Entry) -> None:
        self.position[entry.id] = len(self.view)
        self.view.append(entry)
        self.tokens += entry.tokens


class _EditedView:
    """A replayed view with a few `Replace` edits laid over it, which copies nothing of it.

    Valid while the view under it reads no more entries or edits (the request its history was made for);
    a history kept longer replays from scratch when read again.
    """

    def __init__(
        self, base: _ReplayedView, entries: Sequence[Entry], edits: Sequence[Edit], new: Sequence[Replace]
    ) -> None:
        self.base, self.new = base, tuple(new)
        self.base_read = (base.entries.length, base.edits.length)
        self.entries, self.edits = _Prefix(), _Prefix()
        self.entries.read(entries)
        self.edits.read(edits)
        self.position, self.results, self.tokens = base.position, base.results, base.tokens
        self.changed: dict[int, Entry] = {}  # index in the view -> the entry shown there now
        self.now_unedited: set[int] = set()  # results whose last edit here shows them as written
        self.now_edited: set[int] = set()  # results whose last edit here rewrites them
        for edit in self.new:
            index = base.position.get(edit.entry_id)
            if index is None:  # not shown: only named
                continue
            old, written = self.changed.get(index, base.view[index]), entries[edit.entry_id]
            self.changed[index] = dataclasses.replace(written, content=edit.content, tokens=edit.tokens)
            self.tokens += edit.tokens - old.tokens
            if written.kind is EntryKind.RESULT:
                rewritten = edit.content != written.content
                (self.now_edited if rewritten else self.now_unedited).add(written.id)
                (self.now_unedited if rewritten else self.now_edited).discard(written.id)
        self.edited = _Union(base.edited, {edit.entry_id for edit in self.new})

    @property
    def view(self) -> list[Entry]:
        view = list(self.base.view)
        for index, entry in self.changed.items():
            view[index] = entry
        return view

    @property
    def unedited(self) -> set[int]:
        return (self.base.unedited | self.now_unedited) - self.now_edited

    def extends(self, entries: Sequence[Entry], edits: Sequence[Edit]) -> bool:
        return (
            (self.base.entries.length, self.base.edits.length) == self.base_read
            and len(entries) == self.entries.length
            and self.entries.extended_by(entries)
            and len(edits) == self.edits.length
            and self.edits.extended_by(edits)
        )

    def catch_up(self, entries: Sequence[Entry], edits: Sequence[Edit]) -> None:
        """Nothing to read: `extends` holds only while there is nothing new."""

    def extended(
        self, entries: Sequence[Entry], edits: Sequence[Edit], new: Sequence[Edit]
    ) -> _ReplayedView | _EditedView:
        if all(isinstance(edit, Replace) for edit in new):
            return _EditedView(self.base, entries, edits, (*self.new, *cast("Sequence[Replace]", new)))
        return _ReplayedView()  # replays everything when read

    def shown(self, entry_id: int) -> Entry | None:
        index = self.position.get(entry_id)
        if index is None:
            return None
        return self.changed.get(index) or self.base.view[index]


class _Union(AbstractSet[int]):
    """Two sets read as their union, neither copied."""

    def __init__(self, first: AbstractSet[int], second: set[int]) -> None:
        self.first, self.second = first, {i for i in second if i not in first}

    def __contains__(self, item: object) -> bool:
        return item in self.first or item in self.second

    def __iter__(self) -> Iterator[int]:
        return itertools.chain(self.first, self.second)

    def __len__(self) -> int:
        return len(self.first) + len(self.second)


class _LatestReads:
    """The latest result id per call signature, for the prefix of entries read so far."""

    def __init__(self) -> None:
        self.entries = _Prefix()
        self.latest: dict[str, int] = {}
        self.ids: set[int] = set()

    def extends(self, entries: Sequence[Entry]) -> bool:
        return self.entries.extended_by(entries)

    def catch_up(self, entries: Sequence[Entry]) -> AbstractSet[int]:
        for entry in entries[self.entries.length :]:
            if entry.kind is EntryKind.RESULT and entry.call is not None:
                signature = entry.call.signature()
                self.ids.discard(self.latest.get(signature, -1))
                self.latest[signature] = entry.id
                self.ids.add(entry.id)
        self.entries.read(entries)
        return self.ids


def view_tokens(view: Iterable[Entry]) -> int:
    return sum(entry.tokens for entry in view)


class _StepGroups:
    """`step_groups(entries)` for the prefix read so far. Steps only grow as entries are appended; an entry of
    an earlier step than the last group's (not made by the runtime) regroups everything."""

    def __init__(self) -> None:
        self.entries = _Prefix()
        self.groups: list[list[Entry]] = []
        self.by_step: dict[int, list[Entry]] = {}

    def extends(self, entries: Sequence[Entry]) -> bool:
        return self.entries.extended_by(entries)

    def catch_up(self, entries: Sequence[Entry]) -> list[list[Entry]]:
        last = self.groups[-1][0].step if self.groups else None
        for entry in entries[self.entries.length :]:
            if entry.kind not in (EntryKind.ACTION, EntryKind.RESULT, EntryKind.NOTICE):
                continue
            if last is not None and entry.step < last:
                return self._regroup(entries)
            group = self.by_step.get(entry.step)
            if group is None:
                group = self.by_step[entry.step] = []
                self.groups.append(group)
                last = entry.step
            group.append(entry)
        self.entries.read(entries)
        return self.groups

    def _regroup(self, entries: Sequence[Entry]) -> list[list[Entry]]:
        self.by_step = {}
        for entry in entries:
            if entry.kind in (EntryKind.ACTION, EntryKind.RESULT, EntryKind.NOTICE):
                self.by_step.setdefault(entry.step, []).append(entry)
        self.groups = [self.by_step[step] for step in sorted(self.by_step)]
        self.entries.read(entries)
        return self.groups
