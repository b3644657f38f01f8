"""`oracle`: the floor. Tier 0 only, never exported, never proposed.

It reads the task's answer key (the reference solution, and which reference outputs show each literal it
needs), which a real strategy never sees. Of every result the contract lets it cut, it keeps only what the
next use of a literal needs: the literal itself, in the last output before that use that shows it, from
the moment that output arrives until the use; must-keep lines stay, pinned and protected classes stay
whole. Before every request it reads from the history how far the agent got through the
reference, cuts what no step still ahead needs, and drops whole the steps that hold nothing still needed
(call and results together, as `fifo` drops old steps). So no strategy that keeps the reference agent on
its path can send less, and its peak tokens at full success are the limit every comparison is measured
against: how close a guideline gets to keeping only what the task needs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from optimizer.context.contract import Action
from optimizer.context.history import Drop, Edit, Entry, EntryKind, History, Replace
from optimizer.context.moves.base import (
    AnswerKey,
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
    """Keep the literals of a fresh result that their next use needs from it, nothing else."""

    move: Literal["keep_needed"] = "keep_needed"
    action: ClassVar[Action] = Action.COMPRESS

    @property
    def offers_recall(self) -> bool:
        return False

    def write(
        self, raw: Entry, current: str, history: History, ctx: StrategyContext, texts: CompressorTexts | None
    ) -> Written | None:
        fresh = Entry(raw.id, raw.kind, current, raw.step, raw.turn, call=raw.call, retention=raw.retention)
        literals = kept_literals(history, ctx.answer_key, fresh).get(raw.id, [])
        content = kept_content(raw, current, literals)
        if content is None:
            return None
        before = count_tokens(current)
        after = count_tokens(content)
        if after >= before:
            return None
        return Written(content, (write_record("keep_needed", raw, before, after, ctx),))


def kept_content(raw: Entry, current: str, literals: Sequence[str]) -> str | None:
    """`current` cut to the `literals` it shows, each verbatim on a line of its own, must-keep lines restored;
    None: nothing to cut.

    The literal itself, not the line or field around it: the reference agent needs a literal visible and
    nothing more, and a strategy may show less than a line (an offload preview ends mid-line), so only
    the literal alone is a floor no strategy can go under.
    """
    held = [literal for literal in dict.fromkeys(literals) if occurs(literal, current)]
    text = "\n".join(held)
    content = restore_must_keep(text, [raw]) if text else "\n".join(dict.fromkeys(raw.must_keep))
    return None if content == current else content


@dataclass(frozen=True)
class Progress:
    """How far the agent got through the reference, as its history shows."""

    cursor: int  # the first reference step not taken yet
    step_of: Mapping[str, int]  # id of a call the agent made -> the reference step it took


def progress(history: History, reference: Sequence[ReferenceStep]) -> Progress:
    """An action taken as the reference wrote it (same tool, same arguments; the turn's answer for an
    answer step) moves past that step and any step of its turn it skipped; a new user turn moves past
    what is left of the earlier ones. A call made with a guessed value matches no step, so what that step
    needed stays pending: the floor never drops a need early because the agent went astray."""
    cursor = 0
    step_of: dict[str, int] = {}
    for entry in history.entries:
        if entry.kind is EntryKind.USER:
            while cursor < len(reference) and reference[cursor].turn < entry.turn:
                cursor += 1
        elif entry.kind is EntryKind.ACTION:
            # An answer matches the turn's answer step (a step with no call), when the turn has one.
            made: list[tuple[str | None, str | None]] = [(call.signature(), call.id) for call in entry.calls]
            if not made and entry.answer is not None:
                made = [(None, None)]
            for signature, call_id in made:
                for index in range(cursor, len(reference)):
                    step = reference[index]
                    if step.turn != entry.turn:
                        break
                    if (step.call.signature() if step.call is not None else None) == signature:
                        cursor = index + 1
                        if call_id is not None:
                            step_of[call_id] = index
                        break
    return Progress(cursor, step_of)


def pending_literals(history: History, reference: Sequence[ReferenceStep]) -> tuple[str, ...]:
    """The literals of the reference steps the agent has not taken yet."""
    cursor = progress(history, reference).cursor
    return tuple(dict.fromkeys(n.literal for needs in written_needs(reference)[cursor:] for n in needs))


def kept_literals(history: History, key: AnswerKey, fresh: Entry | None = None) -> dict[int, list[str]]:
    """For each result the oracle may cut (and `fresh`, a result being written), the literals it keeps.

    A literal still ahead is kept once, for its next use, and only where nothing else shows it: not when
    the task, a user turn or a step the contract keeps already holds it; else in the last output before
    that use that shows it (the answer key's carriers), which, if it has not arrived yet, will bring it;
    else (the episode left the reference's path, or a cut took it from that output) in the latest result
    that still shows it.
    """
    reference = key.steps
    done = progress(history, reference)
    needs = written_needs(reference)
    shown = {entry.id: entry for entry in history.replay() if entry.id >= 0}
    latest = latest_reads(history.entries)
    groups = step_groups([entry for entry in history.entries if entry.id in shown])
    fixed = [group for group in groups if _fixed(group, latest)]
    staying = [shown[e.id].content for e in history.entries if e.kind in (EntryKind.TASK, EntryKind.USER)]
    staying += [shown[e.id].content for group in fixed for e in group]
    candidates = [shown[e.id] for group in groups if group not in fixed for e in group if e.kind is EntryKind.RESULT]
    if fresh is not None:
        candidates.append(fresh)
    kept: dict[int, list[str]] = {}
    decided: set[str] = set()  # by its next use: a later use is decided when it is the next one
    for index in range(done.cursor, len(reference)):
        for literal in dict.fromkeys(n.literal for n in needs[index]):
            if literal in decided:
                continue
            decided.add(literal)
            if any(occurs(literal, text) for text in staying):
                continue
            holders = [e for e in candidates if occurs(literal, e.content)]
            carrier = max((i for i in key.carriers.get(literal, ()) if i < index), default=None)
            chosen = [e for e in holders if e.call is not None and done.step_of.get(e.call.id) == carrier]
            if not chosen and carrier is not None and carrier >= done.cursor:
                continue  # the output that shows it has not arrived yet
            for entry in chosen[-1:] or holders[-1:]:
                kept.setdefault(entry.id, []).append(literal)
    return kept


def _fixed(group: list[Entry], latest: frozenset[int]) -> bool:
    """A step with a result no stage may clear (skill, receipt, unclassified, the latest state read)."""
    return any(e.kind is EntryKind.RESULT and not clearable(e, latest_ids=latest) for e in group)


def spent(history: History, ctx: StrategyContext) -> tuple[Edit, ...]:
    """Edits that take out of the view what no reference step still ahead needs from it.

    A step whose results the contract lets any stage clear is the oracle's to cut: each result keeps the
    literals `kept_literals` gives it, and a step left with none of them, and no must-keep line, goes whole,
    its call with it. Cuts start from what is shown, so nothing cut comes back.
    """
    shown = {entry.id: entry for entry in history.replay() if entry.id >= 0}
    latest = latest_reads(history.entries)
    literals = kept_literals(history, ctx.answer_key)
    edits: list[Edit] = []
    for group in step_groups([entry for entry in history.entries if entry.id in shown]):
        if _fixed(group, latest):
            continue
        results = [shown[e.id] for e in group if e.kind is EntryKind.RESULT]
        new: dict[int, str] = {}
        for entry in results:
            cut = kept_content(entry, entry.content, literals.get(entry.id, []))
            new[entry.id] = entry.content if cut is None else cut
        if not any(new.values()):
            edits.append(Drop(tuple(e.id for e in group)))
            continue
        for entry in results:
            if new[entry.id] != entry.content and count_tokens(new[entry.id]) < entry.tokens:
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
