"""Running a task's reference solution straight against its environment, without an agent or a context."""

from __future__ import annotations

from optimizer.world import CheckResult, Task


def execute(
    task: Task, *, drop: int | None = None, repeat: int | None = None, answer: str | None = None
) -> CheckResult:
    """The reference run, optionally without one call or with one twice, so a checker's strictness is testable."""
    assert task.reference is not None
    env = task.make_env()
    calls = [s.call for s in task.reference if s.call is not None]
    for i, call in enumerate(calls):
        if i == drop:
            continue
        env.call(call, 0)
        if i == repeat:
            env.call(call, 0)
    final = next(s.answer for s in reversed(task.reference) if s.call is None)
    return env.check([final if answer is None else answer])
