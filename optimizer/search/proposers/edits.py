"""Edits on a policy's move lists, shared by the deterministic proposers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from optimizer.context.moves import Move
from optimizer.world.retention import RetentionClass

M = TypeVar("M", bound=Move)

# Where a move type sits in a write or history list: cheap exact moves first, the LLM last.
WRITE_ORDER = ("extract", "offload", "compress")
HISTORY_ORDER = ("extract_old", "clear", "mask", "drop", "summarize")


def classes_of(move: Move) -> tuple[RetentionClass, ...]:
    """The classes a move touches: its own list, or every class the contract lets it touch."""
    if move.classes is not None:
        return move.classes
    return tuple(c for c in RetentionClass if move.applies_to(c, ()))


def without(moves: Sequence[M], retention: RetentionClass, match: Callable[[M], bool]) -> tuple[M, ...]:
    """`moves` with `retention` taken out of each matching move (a move left with no class goes)."""
    out = []
    for move in moves:
        if match(move) and retention in classes_of(move):
            rest = tuple(c for c in classes_of(move) if c is not retention)
            if not rest:
                continue
            move = move.model_copy(update={"classes": rest})
        out.append(move)
    return tuple(out)


def inserted(moves: Sequence[M], move: M, order: Sequence[str]) -> tuple[M, ...]:
    """`moves` with `move` placed before the first move that comes later in `order`."""
    rank = order.index(move.move) if move.move in order else len(order)
    for i, existing in enumerate(moves):
        if (order.index(existing.move) if existing.move in order else len(order)) > rank:
            return (*moves[:i], move, *moves[i:])
    return (*moves, move)


def scaled(value: int, factor: float, floor: int) -> int:
    """`value` × `factor`, not below `floor` (a value already at or under the floor stays)."""
    return max(floor, int(value * factor)) if value > floor else value
