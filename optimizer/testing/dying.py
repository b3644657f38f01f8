"""A task whose tool kills the process running it, the first time only: a worker lost mid-episode.

The first call of its tool (in whichever process) leaves a marker file and SIGKILLs its own process;
every later call, in any process, answers. Fault tests run it under an executor and check that the
episode was run again and recorded once.
"""

from __future__ import annotations

import functools
import os
import signal
from collections.abc import Sequence
from pathlib import Path

from optimizer.world import (
    CheckResult,
    Environment,
    Need,
    NeedKind,
    ReferenceStep,
    RetentionClass,
    Task,
    ToolCall,
    ToolOutput,
    ToolSpec,
    UserTurn,
)

LOOKUP = ToolSpec(
    "lookup", "Look the code up.", {"type": "object", "properties": {}}, retention_class=RetentionClass.STATIC
)
CODE = "CODE-4471"


class DiesOnce(Environment):
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def tools(self, turn: int) -> Sequence[ToolSpec]:
        return (LOOKUP,)

    def call(self, call: ToolCall, turn: int) -> ToolOutput:
        try:
            with self.marker.open("x") as handle:  # exactly one caller ever creates it
                handle.write(str(os.getpid()))
        except FileExistsError:
            return ToolOutput(f"the code is {CODE}")
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("unreachable")

    def check(self, answers: Sequence[str | None]) -> CheckResult:
        ok = CODE in (answers[0] or "")
        return CheckResult(ok, () if ok else ("answer lacks the code",))


def dies_once_task(marker: Path, task_id: str = "dies-once") -> Task:
    steps = (
        ReferenceStep(0, ToolCall("c1", "lookup", {})),
        ReferenceStep(0, answer=CODE, needs=(Need(NeedKind.VALUE, CODE, guess="CODE-0000"),)),
    )
    return Task(
        task_id,
        "faults",
        (UserTurn("Look up the code and answer with it."),),
        functools.partial(DiesOnce, marker),
        reference=steps,
    )
