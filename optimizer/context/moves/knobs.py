"""Knobs: the numbers of a move that a search turns, declared by the move that has them.

A knob names its field (a dotted path into a nested settings model: `select.min_words`), the range a
search keeps it in and the way that compresses more. The search reads these declarations and never a
move's attributes: `tighten` turns knobs one step that way, one variant per named `Tightening`, and
`relax` one step back; the acon search's provoked parent sets the knobs that decide when a move fires to
where every run compresses; `graft` keeps a borrowed move above its `graft_floor`. A knob declared on a
move is turned by all of them with no edit to any of them.

Every edit is a `model_copy` (unvalidated), as every edit of a policy by the search is: a provoked
trigger of 0 is below some fields' validated minimum on purpose.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeVar

from pydantic import BaseModel

if TYPE_CHECKING:
    from optimizer.context.moves.base import Move

Number = int | float
M = TypeVar("M", bound=BaseModel)
MoveT = TypeVar("MoveT", bound="Move")


@dataclass(frozen=True)
class Tightening:
    """One variant `tighten` proposes: every knob with a turn of this name moves one step, on every move."""

    name: str  # the suffix of the variant's guideline name
    rationale: str


@dataclass(frozen=True)
class Scale:
    """× `factor`, never past `bound` (None: the knob's range); a value already at or past it stays."""

    factor: float
    bound: Number | None = None


@dataclass(frozen=True)
class Shift:
    """`by` toward more compression (negative: away from it), within the knob's range."""

    by: Number


@dataclass(frozen=True)
class Pin:
    """Set to `value`, whatever it was."""

    value: Number


Step = Scale | Shift | Pin


@dataclass(frozen=True)
class Turn:
    """How a knob moves in one tightening. A `follows` turn is a compensation: it moves only on a move that
    another knob of the same tightening changed (alone, it would undo what the tightening is for)."""

    tightening: Tightening
    step: Step
    follows: bool = False


@dataclass(frozen=True)
class Knob:
    """A tunable number of a move: where it is, the range a search keeps it in, which way compresses more."""

    path: str
    low: Number
    high: Number | None
    compresses: Literal["down", "up"]
    turns: tuple[Turn, ...] = ()
    # Where the provoked parent sets it (past the range on purpose: every run should compress); None: left.
    provoke: Step | None = None
    # The least a copy of the move taken from another candidate keeps (None: it is taken as it is).
    graft_floor: Number | None = None
    digits: int | None = None  # a fraction's decimal places; None: a whole number

    def read(self, model: BaseModel) -> Number:
        value: object = model
        for part in self.path.split("."):
            value = getattr(value, part)
        if not isinstance(value, int | float):
            raise TypeError(f"knob {self.path!r} of {type(model).__name__} is not a number: {value!r}")
        return value

    def stepped(self, value: Number, step: Step) -> Number:
        """`value` after `step`; a value already at or past the bound it moves toward stays."""
        if isinstance(step, Pin):
            return step.value
        if isinstance(step, Scale):
            down = step.factor < 1
            bound = step.bound if step.bound is not None else (self.low if down else self.high)
            moved = value * step.factor
        else:
            down = (step.by > 0) == (self.compresses == "down")
            bound = self.low if down else self.high
            moved = value - abs(step.by) if down else value + abs(step.by)
        moved = int(moved) if self.digits is None else round(moved, self.digits)
        if bound is None:
            return moved
        if down:
            return value if value <= bound else max(bound, moved)
        return value if value >= bound else min(bound, moved)


def with_values(model: M, values: Mapping[str, Number]) -> M:
    """`model` with each dotted path set to its value (a nested model is copied with its own part)."""
    update: dict[str, object] = {}
    nested: dict[str, dict[str, Number]] = {}
    for path, value in values.items():
        head, _, rest = path.partition(".")
        if rest:
            nested.setdefault(head, {})[rest] = value
        else:
            update[head] = value
    for head, inner in nested.items():
        update[head] = with_values(getattr(model, head), inner)
    return model.model_copy(update=update)


def tightened(move: MoveT, tightening: Tightening) -> MoveT:
    """`move` with every knob that turns in `tightening` one step on (itself when none moves)."""
    return _turned(move, tightening, lambda step: step)


def loosened(move: MoveT, tightening: Tightening) -> MoveT:
    """`move` with every knob that turns in `tightening` one step back, toward keeping more (itself when none
    moves). A `Pin` has no way back and is left where it is."""
    return _turned(move, tightening, _reversed)


def _reversed(step: Step) -> Step | None:
    if isinstance(step, Scale):
        return Scale(1 / step.factor)  # back within the knob's own range, not toward the tightening's bound
    if isinstance(step, Shift):
        return Shift(-step.by)
    return None


def _turned(move: MoveT, tightening: Tightening, direction: Callable[[Step], Step | None]) -> MoveT:
    leading: dict[str, Number] = {}
    following: dict[str, Number] = {}
    for knob in move.knobs:
        for turn in knob.turns:
            step = direction(turn.step) if turn.tightening == tightening else None
            if step is None:
                continue
            value = knob.read(move)
            moved = knob.stepped(value, step)
            if moved != value:
                (following if turn.follows else leading)[knob.path] = moved
    return with_values(move, {**leading, **following}) if leading else move


def provoked(move: MoveT) -> MoveT:
    """`move` with every knob that declares a provoked setting at it."""
    values = {k.path: k.stepped(k.read(move), k.provoke) for k in move.knobs if k.provoke is not None}
    return with_values(move, values)


def graft_floored(move: MoveT) -> MoveT:
    """`move`, taken from another candidate, with each knob kept at or above its `graft_floor`."""
    values = {k.path: k.graft_floor for k in move.knobs if k.graft_floor is not None and k.read(move) < k.graft_floor}
    return with_values(move, values) if values else move


# The tightenings of acon's own moves, in the order `tighten` proposes them; a tightening a move declares
# beyond these comes after them.
LOWER = Tightening("lower", "thresholds x0.6")
SHORT = Tightening("short", "output caps and previews x0.6")
FEWER = Tightening("fewer", "one fewer raw recent step")
STRICT = Tightening("strict", "stricter extraction (more words to mention, fewer head units, higher ratio)")
DISTINCT = Tightening(
    "distinct", "extraction: a term must be in at most half the share of units it was before to count as a mention"
)
RARE = Tightening(
    "rare", "extraction: a request word must be in at most half the share of units it was before to count"
)
# Dropping common words lowers every unit's count, the needed one's too: alone, the knob often cuts a needed
# row, and one word fewer alone keeps many more. Each is worse than the parent and both together are better,
# so a one-knob-at-a-time search needs them as one step.
RARE_FEWER = Tightening(
    "rare_fewer", "extraction: rarer request words only (half the share), and one word fewer to count as a mention"
)
TIGHTENINGS = (LOWER, SHORT, FEWER, STRICT, DISTINCT, RARE, RARE_FEWER)

# Below these a size threshold saves too little to pay for a cache break.
MIN_OVER = 128
# The size threshold of a write move or an extraction of old results; the provoked parent cuts it to a tenth.
OVER = Knob("over", MIN_OVER, None, "down", (Turn(LOWER, Scale(0.6)),), provoke=Scale(0.1, bound=64))


# A mask or clear taken from another candidate hides only results over this many tokens: hiding a 20-token
# result saves little and, for an unrecoverable mask, throws away the handle an extraction left there.
GRAFTED_HIDE_OVER = 200


def keep_last(low: int) -> Knob:
    """The raw recent steps (or results) a history move leaves alone; the provoked parent keeps one."""
    return Knob("keep_last", low, None, "down", (Turn(FEWER, Shift(1)),), provoke=Pin(1))
