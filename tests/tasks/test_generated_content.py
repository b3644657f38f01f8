"""The generated suites' content is pinned: a refactor of a task builder must leave every task byte-identical.

A task is code, not data, so its serialization runs it: the statement, reference and meta, the tools its
environment offers, every output of the reference executed as written, and the checker's verdicts on the
reference answer, on no answer, on one that reports nothing, and with each reference call left out or made
twice. A change here that is meant (a new instruction, another world) updates the pin below; one that is not
is a bug in the refactor.
"""

from __future__ import annotations

import hashlib

import pytest

from optimizer.world import Suite, SuiteSource, Task, ToolCall, classify_result
from tasks.builtin import BuiltinSuite
from tasks.reach import ReachSuite
from tasks.reach_long import ReachLongSuite

PINNED = {
    "builtin": "6c1937aeec76c07d1afc67dd3dd0d957b304e60ba4b5855a119c7ccfc65d7252",
    "reach": "5390c9e1d3c65cfa5a14bcb5b7cef0620a6941f14003113b4bfa889d93c9bf90",
    "reach_long": "2cfa364cfe18c2d5ea3d15133b29dc44e4842d4e1d42b75d894226d7a39781ad",
}
SOURCES: dict[str, SuiteSource] = {"builtin": BuiltinSuite(), "reach": ReachSuite(), "reach_long": ReachLongSuite()}


def _run(task: Task, calls: list[ToolCall], answer: str | None) -> tuple[list[str], str]:
    """Each call's output and retention class, then the checker's verdict on `answer`."""
    env = task.make_env()
    specs = {spec.name: spec for spec in env.tools(0)}
    outputs = []
    for call in calls:
        output = env.call(call, 0)
        outputs.append(repr((output, classify_result(specs.get(call.name), call, output).value)))
    return outputs, repr(env.check([answer]))


def serialized(task: Task) -> list[str]:
    """One task as lines of text: what it states, offers, returns and how its checker judges it."""
    steps = task.reference or ()
    calls = [s.call for s in steps if s.call is not None]
    answer = next((s.answer for s in reversed(steps) if s.call is None), None)
    tools = [repr((s.openai_schema(), s.retention_class.value, s.side_effect)) for s in task.make_env().tools(0)]
    outputs, verdict = _run(task, calls, answer)
    # The checker's other branches: no answer, an answer that reports nothing, a call left out or made twice.
    verdicts = [_run(task, calls, other)[1] for other in (None, "done")]
    verdicts += [_run(task, calls[:i] + calls[i + 1 :], answer)[1] for i in range(len(calls))]
    verdicts += [_run(task, calls[: i + 1] + calls[i:], answer)[1] for i in range(len(calls))]
    head = repr((task.id, task.suite, task.turns, steps, task.max_steps_per_turn, sorted(task.meta.items())))
    return [head, *tools, *outputs, verdict, *verdicts]


def suite_lines(suite: Suite) -> list[str]:
    return [repr((sorted(suite.train_ids), sorted(suite.test_ids)))] + [
        line for task in suite.tasks for line in serialized(task)
    ]


def digest(suite: Suite) -> str:
    return hashlib.sha256("\n".join(suite_lines(suite)).encode()).hexdigest()


@pytest.mark.parametrize("name", sorted(PINNED))
def test_the_generated_tasks_are_the_pinned_ones(name):
    assert digest(SOURCES[name].load()) == PINNED[name], (
        f"the {name} suite's tasks changed; if that is meant, stored runs of it are stale: update the pin"
    )
