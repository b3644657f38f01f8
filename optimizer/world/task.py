"""Tasks, their environments and checkers, and reference solutions annotated with what each step needs."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from optimizer.world.tool import ToolCall, ToolOutput, ToolSpec


@dataclass(frozen=True)
class CheckResult:
    """A deterministic verdict with the reasons behind it."""

    passed: bool
    reasons: tuple[str, ...] = ()
    # Blocking faults the acceptance rules count separately: a lost must-keep rule, a duplicate
    # write, a finish claimed without a required step.
    blocking: tuple[str, ...] = ()


class Environment(ABC):
    """One task's world for one episode: executes calls, remembers them, checks the end state."""

    @abstractmethod
    def tools(self, turn: int) -> Sequence[ToolSpec]:
        """Tools the agent may call during user turn `turn` (0-based)."""

    @abstractmethod
    def call(self, call: ToolCall, turn: int) -> ToolOutput:
        """Execute one call. Tool failures come back as `ToolOutput(is_error=True)`, never raise."""

    @abstractmethod
    def check(self, answers: Sequence[str | None]) -> CheckResult:
        """Verdict over everything that happened; `answers` holds the final answer of each turn."""

    def close(self) -> None:  # noqa: B027 - optional hook, most environments hold no resources
        """Release anything held by the episode."""


class NeedKind(StrEnum):
    """Why a reference step needs a literal, and so what an agent without it does."""

    VALUE = "value"  # an argument first seen in tool output or a user turn: without it, guess
    RULE = "rule"  # a skill clause gating the step: without it, skip the step
    RECEIPT = "receipt"  # proof an earlier write happened: without it, repeat the write
    PAGE = "page"  # a "showing 1-20 of 47" warning: without it, stop at page one
    ERROR = "error"  # an error the step reacts to: without it, carry on as if nothing failed


@dataclass(frozen=True)
class Need:
    """A literal that must be visible in the context for a reference step to be taken as written."""

    kind: NeedKind
    literal: str
    # VALUE: the argument that carries the literal and the value an agent would guess instead.
    argument: str | None = None
    guess: Any = None
    # RECEIPT: the write an agent repeats when it cannot see that the write already happened.
    repeat: ToolCall | None = None
    # The retention class of the content the literal first appeared in, when the suite knows it.
    source_class: str | None = None
    # The text of the step's answer or arguments this literal decides, when it is not the literal itself
    # (a table row decides which "30 days" to quote): what an agent without the literal writes wrong.
    shown_as: str | None = None


@dataclass(frozen=True)
class ReferenceStep:
    """One step of a reference solution: a call, or the turn's final answer when `call` is None."""

    turn: int
    call: ToolCall | None = None
    answer: str | None = None
    needs: tuple[Need, ...] = ()


@dataclass(frozen=True)
class UserTurn:
    """A user message. The first turn is the task statement; later ones arrive after a finish."""

    content: str


@dataclass(frozen=True)
class Task:
    """An instruction (possibly over several user turns), an environment factory and a checker."""

    id: str
    suite: str
    turns: tuple[UserTurn, ...]
    make_env: Callable[[], Environment] = field(compare=False)
    reference: tuple[ReferenceStep, ...] | None = None
    max_steps_per_turn: int = 20
    meta: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def instruction(self) -> str:
        return self.turns[0].content
