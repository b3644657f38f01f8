"""The one interface every context strategy implements.

A strategy is a pydantic model: its fields are its config, `type` selects it in the union. It sees
the history and returns *records*: content written at write time, and edits to replay. It never
mutates the history itself (the loop appends what it returns), so every compression is auditable.
"""

from __future__ import annotations

import hashlib
from abc import ABC
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from optimizer.context.compressor import Compressor
from optimizer.context.contract import Action, contract_for, may
from optimizer.context.history import Edit, Entry, EntryKind, History, Replace
from optimizer.context.recall import RecallStore
from optimizer.context.record import CompressionRecord


@dataclass
class StrategyContext:
    """What a strategy may use during one episode besides the history."""

    task: str
    step: int
    store: RecallStore
    compressor: Compressor | None = None
    # Written content of the results since the last request, for write-time decisions.
    notes: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Written:
    """Checkpoint 2 content for one tool result, and the record if the stage changed it."""

    content: str
    record: CompressionRecord | None = None


@dataclass(frozen=True)
class Condensation:
    edits: tuple[Edit, ...]
    records: tuple[CompressionRecord, ...]


class ContextStrategy(BaseModel, ABC):
    """Base of all strategies. Defaults: write results verbatim, never condense."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str

    def write(self, raw: Entry, history: History, ctx: StrategyContext) -> Written:
        """Checkpoint 1 → 2: what enters the history for a raw tool result."""
        return Written(raw.content)

    def condense(self, history: History, ctx: StrategyContext) -> Condensation | None:
        """Checkpoint 2 → 3: edits to replay before the next request (trigger and action)."""
        return None

    def presend_budget(self) -> int | None:
        """Checkpoint 3 → 4: hard token budget for the replayed history, or None."""
        return None

    @property
    def offers_recall(self) -> bool:
        """Whether the agent gets the `recall` tool."""
        return False

    @property
    def uses_compressor(self) -> bool:
        return False

    def version(self) -> str:
        """Content hash of the config: identical configs compress identically."""
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:12]

    def label(self) -> str:
        return self.type


def step_groups(entries: Sequence[Entry]) -> list[list[Entry]]:
    """Entries grouped by agent step. An action and its results always share a group."""
    groups: dict[int, list[Entry]] = {}
    for entry in entries:
        if entry.kind in (EntryKind.ACTION, EntryKind.RESULT, EntryKind.NOTICE):
            groups.setdefault(entry.step, []).append(entry)
    return [groups[step] for step in sorted(groups)]


def clearable(entry: Entry, *, latest_ids: frozenset[int] = frozenset()) -> bool:
    """Whether the contract lets any stage replace this entry with a placeholder."""
    if entry.kind is not EntryKind.RESULT or entry.recalled_handle is not None:
        return False
    if not may(entry.retention, Action.CLEAR):
        return False
    return not (contract_for(entry.retention).latest_kept and entry.id in latest_ids)


def latest_reads(entries: Sequence[Entry]) -> frozenset[int]:
    """Ids of the most recent result of each distinct call (for classes whose latest value is kept)."""
    latest: dict[str, int] = {}
    for entry in entries:
        if entry.kind is EntryKind.RESULT and entry.call is not None:
            latest[entry.call.signature()] = entry.id
    return frozenset(latest.values())


def already_edited(history: History) -> set[int]:
    """Entries some earlier edit already replaced, summarized or dropped."""
    ids: set[int] = set()
    for edit in history.edits:
        if isinstance(edit, Replace):
            ids.add(edit.entry_id)
        else:
            ids.update(edit.entry_ids)
    return ids


def replay_record(
    strategy: str, action: str, history: History, edits: Sequence[Edit], ctx: StrategyContext, **extra: object
) -> CompressionRecord:
    """Exact before/after accounting of new edits, by replaying the view with and without them."""
    from optimizer.context.history import replay

    before = {e.id: e for e in history.replay()}
    after = {e.id: e for e in replay(history.entries, [*history.edits, *edits])}
    affected = sorted(i for i in before if i >= 0 and (i not in after or after[i].content != before[i].content))
    tokens_before = sum(before[i].tokens for i in affected) + (before[-1].tokens if -1 in before else 0)
    tokens_after = sum(after[i].tokens for i in affected if i in after) + (after[-1].tokens if -1 in after else 0)
    by_class: dict[str, int] = {}
    for i in affected:
        entry = before[i]
        lost = entry.tokens - (after[i].tokens if i in after else 0)
        if lost > 0:
            key = str(entry.retention or "unknown") if entry.kind is EntryKind.RESULT else entry.kind.value
            by_class[key] = by_class.get(key, 0) + lost
    return CompressionRecord(
        strategy=strategy, stage="replay", step=ctx.step, action=action, entry_ids=tuple(affected),
        tokens_before=tokens_before, tokens_after=tokens_after, dropped_by_class=by_class,
        **extra,  # type: ignore[arg-type]
    )
