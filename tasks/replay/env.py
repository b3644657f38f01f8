"""The replay environment: recorded calls get their recorded outputs, anything else an error.

Matching is by name and arguments (`ToolCall.signature`, so key order and call ids do not matter) and
order-aware: a call recorded twice (a balance read before and after a write) gets its two recorded
outputs in order. A call beyond the recording, or one never recorded (a guessed id), gets an error
result. The checker passes when every recorded call was made, no write (a tool with `side_effect`) was
made more often than recorded, every user turn was finished, and each answer still holds the literals
its reference step needs (stored suites carry these; imported runs have none).
"""

from __future__ import annotations

import functools
from collections import defaultdict, deque
from collections.abc import Mapping, Sequence
from typing import Any

from optimizer.world.needs import occurs
from optimizer.world.retention import RetentionClass
from optimizer.world.task import CheckResult, Environment, NeedKind, Task, UserTurn
from optimizer.world.tool import ToolCall, ToolOutput, ToolSpec
from tasks.replay.store import RecordedCall, StoredTask

_SHOWN = 160  # characters of a call signature quoted in a reason


class ReplayEnvironment(Environment):
    """One episode over a recording; `check` says which recorded calls were never made."""

    def __init__(self, stored: StoredTask, tools: Sequence[tuple[ToolSpec, int]]) -> None:
        self._stored = stored
        self._tools = tools
        self._side_effect = {spec.name for spec, _ in tools if spec.side_effect}
        self._pending: dict[str, deque[int]] = defaultdict(deque)
        for index, recorded in enumerate(stored.recording):
            self._pending[recorded.call.signature()].append(index)
        self._made = [False] * len(stored.recording)
        self._outside: list[str] = []
        self._duplicates: list[str] = []

    def tools(self, turn: int) -> Sequence[ToolSpec]:
        return [spec for spec, from_turn in self._tools if from_turn <= turn]

    def call(self, call: ToolCall, turn: int) -> ToolOutput:
        signature = call.signature()
        queue = self._pending.get(signature)
        if queue:
            index = queue.popleft()
            self._made[index] = True
            return self._stored.recording[index].output
        if signature in self._pending and call.name in self._side_effect:
            self._duplicates.append(signature)
            return ToolOutput(
                f"Error: {call.name} was already called with these arguments as often as in the recording.",
                is_error=True,
            )
        self._outside.append(signature)
        return ToolOutput(
            f"Error: no recorded result for {_short(signature)}; a replay answers only the recorded calls.",
            is_error=True,
        )

    def check(self, answers: Sequence[str | None]) -> CheckResult:
        reasons = [
            f"recorded call {index + 1} (turn {recorded.turn}) not made: {_short(recorded.call.signature())}"
            for index, (recorded, made) in enumerate(zip(self._stored.recording, self._made, strict=True))
            if not made
        ]
        reasons += [f"duplicate write: {_short(signature)}" for signature in self._duplicates]
        for turn in range(len(self._stored.turns)):
            answer = answers[turn] if turn < len(answers) else None
            if answer is None:
                reasons.append(f"turn {turn} was not finished")
                continue
            for step in self._stored.reference:
                if step.turn != turn or step.call is not None:
                    continue
                for need in step.needs:
                    shown = need.shown_as or need.literal
                    if need.kind is NeedKind.VALUE and not occurs(shown, answer):
                        reasons.append(f"turn {turn} answer lacks {shown!r}")
        if reasons and self._outside:
            first = _short(self._outside[0])
            reasons.append(f"{len(self._outside)} call(s) outside the recording, first: {first}")
        blocking = tuple("duplicate write" for _ in self._duplicates)
        return CheckResult(not reasons, tuple(reasons), blocking)


def _short(text: str) -> str:
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def replay_task(stored: StoredTask) -> Task:
    """The runnable task behind a stored row (tools and environment factory built once, shared)."""
    tools = tuple((_with_call_classes(t.spec, stored.recording), t.from_turn) for t in stored.tools)
    return Task(
        id=stored.id,
        suite=stored.suite,
        turns=tuple(UserTurn(text) for text in stored.turns),
        make_env=functools.partial(ReplayEnvironment, stored, tools),
        reference=stored.reference,
        max_steps_per_turn=stored.max_steps_per_turn,
        meta=stored.meta,
    )


def _with_call_classes(spec: ToolSpec, recording: Sequence[RecordedCall]) -> ToolSpec:
    """The spec, plus the per-call classes the original registration gave from the arguments."""
    classes = {
        r.call.signature(): r.call_class for r in recording if r.call.name == spec.name and r.call_class is not None
    }
    if not classes:
        return spec
    return ToolSpec(
        spec.name,
        spec.description,
        spec.parameters,
        spec.retention_class,
        spec.side_effect,
        classify_call=functools.partial(_recorded_class, spec.name, classes),
    )


def _recorded_class(
    name: str, classes: Mapping[str, RetentionClass], arguments: Mapping[str, Any]
) -> RetentionClass | None:
    return classes.get(ToolCall("", name, arguments).signature())
