"""`oracle`: the floor. Tier 0 only, never exported, never proposed.

It reads the task's reference solution (which a real strategy never sees) and keeps, of every tool
result the contract lets it cut, exactly the parts holding a literal that a reference step *still ahead*
needs, plus the must-keep lines; pinned and protected classes stay whole. Each part goes at its last use:
before every request the oracle reads from the history how far the agent got through the reference, cuts
what no later step needs, and drops whole the steps that hold nothing still needed (call and results
together, as `fifo` drops old steps), so no strategy that keeps the reference agent on its path can send
less. Its peak tokens at full success are the limit every comparison is measured against: how close a
guideline gets to keeping only what the task needs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import ClassVar, Literal

from optimizer.context.contract import Action
from optimizer.context.extraction import Parsed, Unit, parse_units, render
from optimizer.context.history import Drop, Edit, Entry, EntryKind, History, Replace
from optimizer.context.moves.base import (
    CompressorTexts,
    Condensation,
    StrategyContext,
    WriteMove,
    Written,
    clearable,
    latest_reads,
    replay_record,
    step_groups,
    write_record,
)
from optimizer.context.policy import RetentionPolicy
from optimizer.context.recall import restore_must_keep
from optimizer.context.strategies.base import ContextStrategy
from optimizer.tokens import count_tokens
from optimizer.world.needs import occurs, written_needs
from optimizer.world.task import ReferenceStep


class KeepNeeded(WriteMove):
    """Keep the units of a result that hold a literal a reference step still ahead needs, nothing else."""

    move: Literal["keep_needed"] = "keep_needed"
    action: ClassVar[Action] = Action.COMPRESS

    @property
    def offers_recall(self) -> bool:
        return False

    def write(
        self, raw: Entry, current: str, history: History, ctx: StrategyContext, texts: CompressorTexts | None
    ) -> Written | None:
        content = kept_content(raw, current, pending_literals(history, ctx.reference))
        if content is None:
            return None
        before = count_tokens(current)
        after = count_tokens(content)
        if after >= before:
            return None
        return Written(content, (write_record("keep_needed", raw, before, after, ctx),))


def kept_content(raw: Entry, current: str, literals: Sequence[str]) -> str | None:
    """`current` cut to the units holding one of `literals`, must-keep lines restored; None: all are needed."""
    parsed = parse_units(current)
    needed = needed_units(parsed, [literal for literal in literals if occurs(literal, current)])
    if len(needed) == len(parsed.units):
        return None
    return restore_must_keep(render(parsed, needed) if needed else "", [raw])


def pending_literals(history: History, reference: Sequence[ReferenceStep]) -> tuple[str, ...]:
    """The literals of the reference steps the agent has not taken yet, as its history shows.

    An action taken as the reference wrote it (same tool, same arguments; the turn's answer for an
    answer step) moves past that step and any step of its turn it skipped; a new user turn moves past
    what is left of the earlier ones. A call made with a guessed value matches no step, so what that step
    needed stays pending: the floor never drops a need early because the agent went astray.
    """
    needs = written_needs(reference)
    cursor = 0
    for entry in history.entries:
        if entry.kind is EntryKind.USER:
            while cursor < len(reference) and reference[cursor].turn < entry.turn:
                cursor += 1
        elif entry.kind is EntryKind.ACTION:
            # An answer matches the turn's answer step (a step with no call), when the turn has one.
            made: list[str | None] = [call.signature() for call in entry.calls]
            if not made and entry.answer is not None:
                made = [None]
            for signature in made:
                for index in range(cursor, len(reference)):
                    step = reference[index]
                    if step.turn != entry.turn:
                        break
                    taken = step.call.signature() if step.call is not None else None
                    if taken == signature:
                        cursor = index + 1
                        break
    return tuple(dict.fromkeys(need.literal for step_needs in needs[cursor:] for need in step_needs))


def needed_units(parsed: Parsed, literals: list[str]) -> list[int]:
    """Units holding a literal, as the tool printed it (JSON-escaped), as the leaf reads, or as the leaf
    renders alone (a literal that takes its JSON key along, `"units_in_stock": 3`). A literal that spans
    several lines of a split string leaf (a whole file posted as a tweet) keeps the whole leaf; one that no
    unit or leaf holds (it spans several leaves) keeps every unit, since the floor must not lose a need."""
    if not literals:
        return []
    leaves: dict[tuple[tuple[str | int, ...], bool], list[Unit]] = {}
    for unit in parsed.units:
        leaves.setdefault((unit.path, unit.line is not None), []).append(unit)
    keep: set[int] = set()
    alone: dict[int, str] = {}

    def holds(literal: str, texts: tuple[str, ...]) -> bool:
        return any(occurs(literal, text) for text in texts)

    def forms(value: str) -> tuple[str, ...]:
        return value, json.dumps(value, ensure_ascii=parsed.ascii_only)[1:-1]

    def rendered(unit: Unit) -> str:
        if unit.index not in alone:
            alone[unit.index] = render(parsed, [unit.index]) if parsed.is_json else unit.text
        return alone[unit.index]

    # Literal by literal: a short one (a tweet id "1") held by one line must not hide that another one (the
    # whole diff being tweeted) is held only by the leaf as a whole.
    for literal in literals:
        held = False
        for (_, split), units in leaves.items():
            one_by_one = [u.index for u in units if holds(literal, (*forms(u.value), u.text, rendered(u)))]
            if one_by_one:
                keep.update(one_by_one)
                held = True
            elif split and holds(literal, forms("\n".join(u.value for u in units))):
                keep.update(u.index for u in units)  # only the leaf as a whole holds it
                held = True
        if not held:
            return [u.index for u in parsed.units]
    return sorted(keep)


def spent(history: History, ctx: StrategyContext) -> tuple[Edit, ...]:
    """Edits that take out of the view what no reference step still ahead needs.

    A step whose results the contract lets any stage clear (not a skill, a receipt, an unclassified
    result or the latest state read) is the oracle's to cut: each result keeps the units holding a pending
    literal, and a step left with none of them, and no must-keep line, goes whole, its call with it. A
    literal already visible in what stays anyway (the task, the user's turns, the steps the contract keeps)
    keeps nothing more.
    """
    pending = pending_literals(history, ctx.reference)
    shown = {entry.id: entry for entry in history.replay() if entry.id >= 0}
    latest = latest_reads(history.entries)
    groups = step_groups([entry for entry in history.entries if entry.id in shown])

    def fixed(group: list[Entry]) -> bool:
        return any(e.kind is EntryKind.RESULT and not clearable(e, latest_ids=latest) for e in group)

    staying = [shown[e.id].content for e in history.entries if e.kind in (EntryKind.TASK, EntryKind.USER)]
    staying += [shown[e.id].content for group in groups if fixed(group) for e in group]
    wanted = [literal for literal in pending if not any(occurs(literal, text) for text in staying)]
    edits: list[Edit] = []
    for group in groups:
        if fixed(group):
            continue
        results = [e for e in group if e.kind is EntryKind.RESULT]
        new: dict[int, str] = {}
        for entry in results:
            cut = kept_content(entry, entry.content, wanted)
            new[entry.id] = entry.content if cut is None else cut
        if not any(new.values()):
            edits.append(Drop(tuple(e.id for e in group)))
            continue
        for entry in results:
            if new[entry.id] != shown[entry.id].content and count_tokens(new[entry.id]) < shown[entry.id].tokens:
                edits.append(Replace(entry.id, new[entry.id]))
    return tuple(edits)


class Oracle(ContextStrategy):
    """Keep exactly what the task's reference still needs, each part until its last use (tier 0 only)."""

    type: Literal["oracle"] = "oracle"
    kind: ClassVar[Literal["oracle"]] = "oracle"
    # Its code is what it does (it has no policy to hash), so a change of what it keeps bumps this: stored
    # episodes of an earlier floor are then never read back as this one's. 2: each part until its last use.
    revision: ClassVar[int] = 2

    def version(self) -> str:
        return hashlib.sha256(f"{super().version()}:{self.revision}".encode()).hexdigest()[:12]

    def write(self, raw: Entry, history: History, ctx: StrategyContext) -> Written:
        # Not a policy move: a guideline may never hold it, so it is applied here, bounded by the contract.
        move = KeepNeeded()
        if not move.applies_to(raw.retention, RetentionPolicy().pinned):
            return Written(raw.content)
        return move.write(raw, raw.content, history, ctx, None) or Written(raw.content)

    def condense(self, history: History, ctx: StrategyContext) -> Condensation | None:
        edits = spent(history, ctx)
        if not edits:
            return None
        return Condensation(edits, (replay_record("keep_needed", history, edits, ctx),))
