"""`oracle`: the floor. Tier 0 only, never exported, never proposed.

It reads the task's reference solution (which a real strategy never sees) and keeps, of every tool
result the contract lets it cut, exactly the parts holding a literal some reference step needs, plus the
must-keep lines; pinned and protected classes stay whole. Its peak tokens at full success are the limit
every comparison is measured against: how close a guideline gets to keeping only what the task needs.
"""

from __future__ import annotations

import json
from typing import ClassVar, Literal

from optimizer.context.contract import Action
from optimizer.context.extraction import Parsed, Unit, parse_units, render
from optimizer.context.history import Entry, History
from optimizer.context.moves.base import CompressorTexts, StrategyContext, WriteMove, Written, write_record
from optimizer.context.policy import RetentionPolicy
from optimizer.context.recall import restore_must_keep
from optimizer.context.strategies.base import ContextStrategy
from optimizer.tokens import count_tokens
from optimizer.world.needs import occurs


class KeepNeeded(WriteMove):
    """Keep the units of a result that hold a literal the reference solution needs, nothing else."""

    move: Literal["keep_needed"] = "keep_needed"
    action: ClassVar[Action] = Action.COMPRESS

    @property
    def offers_recall(self) -> bool:
        return False

    def write(
        self, raw: Entry, current: str, history: History, ctx: StrategyContext, texts: CompressorTexts | None
    ) -> Written | None:
        parsed = parse_units(current)
        literals = [literal for literal in ctx.reference_literals if occurs(literal, current)]
        needed = needed_units(parsed, literals)
        if len(needed) == len(parsed.units):
            return None
        content = restore_must_keep(render(parsed, needed) if needed else "", [raw])
        before = count_tokens(current)
        after = count_tokens(content)
        if after >= before:
            return None
        return Written(content, (write_record("keep_needed", raw, before, after, ctx),))


def needed_units(parsed: Parsed, literals: list[str]) -> list[int]:
    """Units holding a literal, as the tool printed it (JSON-escaped) or as the leaf reads. A literal that
    spans several lines of a split string leaf (a whole file posted as a tweet) keeps the whole leaf."""
    if not literals:
        return []
    leaves: dict[tuple[tuple[str | int, ...], bool], list[Unit]] = {}
    for unit in parsed.units:
        leaves.setdefault((unit.path, unit.line is not None), []).append(unit)
    keep: set[int] = set()

    def holds(literal: str, texts: tuple[str, ...]) -> bool:
        return any(occurs(literal, text) for text in texts)

    def forms(value: str) -> tuple[str, ...]:
        return value, json.dumps(value, ensure_ascii=parsed.ascii_only)[1:-1]

    # Literal by literal: a short one (a tweet id "1") held by one line must not hide that another one (the
    # whole diff being tweeted) is held only by the leaf as a whole.
    for literal in literals:
        for (_, split), units in leaves.items():
            one_by_one = [u.index for u in units if holds(literal, (*forms(u.value), u.text))]
            if one_by_one:
                keep.update(one_by_one)
            elif split and holds(literal, forms("\n".join(u.value for u in units))):
                keep.update(u.index for u in units)  # only the leaf as a whole holds it
    return sorted(keep)


class Oracle(ContextStrategy):
    """Keep exactly what the task's reference needs (tier 0 only)."""

    type: Literal["oracle"] = "oracle"
    kind: ClassVar[Literal["oracle"]] = "oracle"

    def write(self, raw: Entry, history: History, ctx: StrategyContext) -> Written:
        # Not a policy move: a guideline may never hold it, so it is applied here, bounded by the contract.
        move = KeepNeeded()
        if not move.applies_to(raw.retention, RetentionPolicy().pinned):
            return Written(raw.content)
        return move.write(raw, raw.content, history, ctx, None) or Written(raw.content)
