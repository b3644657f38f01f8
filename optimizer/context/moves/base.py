"""What every move shares: the per-step context, the records a move returns, and the contract checks.

A move is one thing a strategy can do to content: offload a large result behind a handle, extract the
lines rules select, compress with an LLM (write time); mask, drop, clear or summarize old results
(history time). A policy is an ordered list of moves; every baseline strategy is a policy of one or
two of them, so a guideline can express each baseline exactly and go beyond it.

A move never edits the history: write moves return what enters it (checkpoint 2), history moves return
edits to replay (checkpoint 3), each with a `CompressionRecord`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from optimizer.context.compressor import Compressor
from optimizer.context.contract import Action, contract_for, may
from optimizer.context.history import Edit, Entry, EntryKind, History, Replace, Summarize
from optimizer.context.moves.knobs import OVER, Knob
from optimizer.context.recall import RecallStore
from optimizer.context.record import CompressionRecord
from optimizer.world.retention import RetentionClass
from optimizer.world.task import ReferenceStep


@dataclass(frozen=True)
class CompressorTexts:
    """The guideline's two natural-language instructions, for the moves that call an LLM."""

    history: str
    observation: str
    version: str


@dataclass(frozen=True)
class AnswerKey:
    """A task's reference solution as the tier-0 `oracle` reads it: its steps, and for each literal they
    need, the steps whose outputs show it (found by replaying the reference once)."""

    steps: tuple[ReferenceStep, ...] = ()
    carriers: Mapping[str, tuple[int, ...]] = field(default_factory=dict)


@dataclass
class StrategyContext:
    """What a strategy may use during one episode besides the history."""

    task: str
    step: int
    store: RecallStore
    compressor: Compressor | None = None
    # Label written into compression records (the strategy's `type`).
    strategy: str = ""
    # The task's reference solution. Only the tier-0 `oracle` may read it: a strategy that looked here
    # would be grading itself with the answer key.
    answer_key: AnswerKey = field(default_factory=AnswerKey)
    notes: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Written:
    """Checkpoint 2 content for one tool result, and the records of the moves that changed it."""

    content: str
    records: tuple[CompressionRecord, ...] = ()


@dataclass(frozen=True)
class Condensation:
    edits: tuple[Edit, ...]
    records: tuple[CompressionRecord, ...]


class Move(BaseModel):
    """Base of every move. `classes`: which retention classes it may touch (None: all the contract allows)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    move: str
    classes: tuple[RetentionClass, ...] | None = Field(
        None, description="Retention classes this move applies to; None: every class the contract allows."
    )

    # The contract action this move amounts to, checked against each class's allowed actions.
    action: ClassVar[Action] = Action.CLEAR
    # Whether it shortens a result in place (only classes whose contract allows a cut, `write_time_cut`).
    cuts: ClassVar[bool] = False
    uses_compressor: ClassVar[bool] = False
    # The numbers a search may turn, each with its range and the way that compresses more (`knobs.py`).
    knobs: ClassVar[tuple[Knob, ...]] = ()

    @field_validator("classes")
    @classmethod
    def _classes_within_contract(cls, classes: tuple[RetentionClass, ...] | None) -> tuple[RetentionClass, ...] | None:
        for retention in classes or ():
            rule = contract_for(retention)
            if cls.action not in rule.allowed or (cls.cuts and not rule.write_time_cut):
                move = cls.model_fields["move"].default
                raise ValueError(f"{retention.value}: move {move!r} breaks the retention contract")
        return classes

    @property
    def offers_recall(self) -> bool:
        """Whether what this move removes stays retrievable through `recall(handle)`."""
        return True

    def applies_to(self, retention: RetentionClass | None, pinned: Sequence[RetentionClass]) -> bool:
        retention = retention or RetentionClass.UNKNOWN
        if retention in pinned:
            return False
        if self.classes is not None and retention not in self.classes:
            return False
        rule = contract_for(retention)
        return self.action in rule.allowed and (rule.write_time_cut or not self.cuts)


class WriteMove(Move):
    """A write-time move: rewrites a fresh result before it enters the history (checkpoint 1 → 2)."""

    cuts: ClassVar[bool] = True
    knobs: ClassVar[tuple[Knob, ...]] = (OVER,)
    over: int = Field(0, ge=0, description="Applies only to content longer than this many tokens.")

    def write(
        self, raw: Entry, current: str, history: History, ctx: StrategyContext, texts: CompressorTexts | None
    ) -> Written | None:
        """`current` is `raw`'s content after the earlier moves; None leaves it unchanged."""
        raise NotImplementedError


class HistoryMove(Move):
    """A history-time move: edits to replay before the next request (checkpoint 2 → 3)."""

    def condense(
        self, history: History, ctx: StrategyContext, texts: CompressorTexts | None, pinned: tuple[RetentionClass, ...]
    ) -> Condensation | None:
        raise NotImplementedError


def fingerprint(model: BaseModel) -> str:
    return hashlib.sha256(model.model_dump_json().encode()).hexdigest()[:12]


def step_groups(entries: Sequence[Entry]) -> list[list[Entry]]:
    """Entries grouped by agent step. An action and its results always share a group."""
    groups: dict[int, list[Entry]] = {}
    for entry in entries:
        if entry.kind in (EntryKind.ACTION, EntryKind.RESULT, EntryKind.NOTICE):
            groups.setdefault(entry.step, []).append(entry)
    return [groups[step] for step in sorted(groups)]


def clearable(entry: Entry, *, latest_ids: AbstractSet[int] = frozenset()) -> bool:
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


def current_summary(history: History) -> Summarize | None:
    for edit in reversed(history.edits):
        if isinstance(edit, Summarize):
            return edit
    return None


def replay_record(
    action: str, history: History, edits: Sequence[Edit], ctx: StrategyContext, **extra: object
) -> CompressionRecord:
    """Exact before/after accounting of new edits: only the entries they name can change."""
    after_history = history.with_edits(edits)
    named = sorted({i for edit in edits for i in ((edit.entry_id,) if isinstance(edit, Replace) else edit.entry_ids)})
    before = {i: e for i in (*named, -1) if (e := history.shown(i)) is not None}
    after = {i: e for i in (*named, -1) if (e := after_history.shown(i)) is not None}
    affected = [i for i in named if i in before and (i not in after or after[i].content != before[i].content)]
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
        strategy=ctx.strategy,
        stage="replay",
        step=ctx.step,
        action=action,
        entry_ids=tuple(affected),
        tokens_before=tokens_before,
        tokens_after=tokens_after,
        dropped_by_class=by_class,
        **extra,  # type: ignore[arg-type]
    )


def write_record(
    action: str, raw: Entry, before: int, after: int, ctx: StrategyContext, **extra: object
) -> CompressionRecord:
    return CompressionRecord(
        strategy=ctx.strategy,
        stage="write",
        step=ctx.step,
        action=action,
        entry_ids=(raw.id,),
        tokens_before=before,
        tokens_after=after,
        dropped_by_class={str(raw.retention or "unknown"): max(0, before - after)},
        **extra,  # type: ignore[arg-type]
    )
