"""The BFCL multi-turn suites: tasks, per-turn tools, and reference solutions with their needs.

Each BFCL turn is one user turn. miss_func's empty turn gets the message BFCL injects there, and the
functions held out until that turn are hidden from `tools(turn)` before it. The reference solution is
BFCL's ground truth, one step per call plus an answer step closing each turn; every call is annotated
with the values it copies from earlier tool output (`optimizer.world.needs.find_needs`), found
by replaying the ground truth once through the environment at load time.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, get_args

from pydantic import ConfigDict, Field

import tasks.bfcl.data as data
from optimizer.world.needs import find_needs
from optimizer.world.suite import Suite, SuiteSource, split_by_seed
from optimizer.world.task import Need, ReferenceStep, Task, UserTurn
from optimizer.world.tool import ToolCall, ToolSpec, classify_result
from tasks.bfcl.calls import parse_reference_call
from tasks.bfcl.env import BfclCase, BfclEnvironment

Category = Literal["multi_turn_base", "multi_turn_long_context", "multi_turn_miss_func", "multi_turn_miss_param"]


class BfclSuite(SuiteSource):
    """BFCL v4 multi-turn tasks (bfcl-eval, Apache-2.0): stateful simulators and the official checker.

    Runs offline; needs `acon setup` (bfcl-eval without its dependencies, plus mpmath). Tasks whose
    ground truth calls a function before BFCL offers it (`multi_turn_miss_func_49` in 2026.3.23 uses
    `tail` two turns early) are left out: no agent limited to the offered tools can solve them.
    """

    model_config = ConfigDict(use_attribute_docstrings=True)

    type: Literal["bfcl"] = "bfcl"
    category: Category = "multi_turn_long_context"
    """BFCL category: `multi_turn_base` (short outputs), `multi_turn_long_context` (outputs up to ~20k
    tokens), `multi_turn_miss_func` (a needed function appears only in a later turn),
    `multi_turn_miss_param` (a turn lacks a parameter the next turn supplies)."""
    limit: int | None = Field(default=None, ge=1)
    """Keep only the first `limit` tasks in BFCL's order (before splitting); None keeps all 200."""
    seed: int = 0
    """Seed of the fixed 50/50 train/test split."""

    @classmethod
    def named(cls) -> dict[str, Callable[[], SuiteSource]]:
        return {
            "bfcl_" + category.removeprefix("multi_turn_"): functools.partial(BfclSuite, category=category)
            for category in get_args(Category)
        }

    def load(self) -> Suite:
        data.require()
        name = "bfcl_" + self.category.removeprefix("multi_turn_")
        entries = data.read_jsonl(f"BFCL_v4_{self.category}.json")
        truth = {
            e["id"]: e["ground_truth"] for e in data.read_jsonl("possible_answer", f"BFCL_v4_{self.category}.json")
        }
        if self.limit is not None:
            entries = entries[: self.limit]
        tasks = []
        for entry in entries:
            case = build_case(entry, truth[entry["id"]], self.category)
            if not hidden_tool_calls(case):
                tasks.append(build_task(case, entry, name))
        train, test = split_by_seed([task.id for task in tasks], self.seed)
        return Suite(name=name, tasks=tuple(tasks), train_ids=train, test_ids=test)


def build_case(entry: Mapping[str, Any], ground_truth: Sequence[Sequence[str]], category: str) -> BfclCase:
    n_turns = len(entry["question"])
    return BfclCase(
        id=entry["id"],
        category=category,
        entry={key: entry[key] for key in ("id", "initial_config", "involved_classes")},
        ground_truth=tuple(tuple(turn) for turn in ground_truth),
        turn_tools=tuple(_visible_tools(entry, turn) for turn in range(n_turns)),
    )


def _visible_tools(entry: Mapping[str, Any], turn: int) -> tuple[ToolSpec, ...]:
    """BFCL's order: all docs of the involved classes minus held-out ones, then each revealed batch."""
    held = entry.get("missed_function", {})
    held_names = {name for names in held.values() for name in names}
    owners = {doc["name"]: cls for cls in entry["involved_classes"] for doc in data.func_docs(cls)}
    shown = [name for name in owners if name not in held_names]
    for reveal in sorted(held, key=int):
        if int(reveal) <= turn:
            shown.extend(held[reveal])
    return tuple(data.tool_spec(owners[name], name) for name in shown)


def user_turns(entry: Mapping[str, Any]) -> tuple[UserTurn, ...]:
    turns = []
    for index, messages in enumerate(entry["question"]):
        if not messages and str(index) in entry.get("missed_function", {}):
            turns.append(UserTurn(data.additional_function_prompt()))
        else:
            turns.append(UserTurn("\n\n".join(message["content"] for message in messages)))
    return tuple(turns)


def hidden_tool_calls(case: BfclCase) -> list[str]:
    """Ground-truth calls of functions not yet offered in their turn (a defect of a few miss_func tasks)."""
    return [
        f"turn {turn}: {text}"
        for turn, strings in enumerate(case.ground_truth)
        for text in strings
        if text.split("(", 1)[0].strip() not in {tool.name for tool in case.tools(turn)}
    ]


def build_task(case: BfclCase, entry: Mapping[str, Any], suite: str) -> Task:
    turns = user_turns(entry)
    return Task(
        id=case.id,
        suite=suite,
        turns=turns,
        make_env=functools.partial(BfclEnvironment, case),
        reference=reference_solution(case, turns),
        # BFCL allows 20 model steps a turn, each with any number of parallel calls; an agent making one
        # call a step must still fit the longest ground-truth turn (34 calls in two long_context tasks).
        max_steps_per_turn=max(data.MAX_STEPS_PER_TURN, 1 + max(map(len, case.ground_truth), default=0)),
        meta={
            "category": case.category,
            "involved_classes": tuple(entry["involved_classes"]),
            "missed_function": {int(turn): tuple(names) for turn, names in entry.get("missed_function", {}).items()},
            "ground_truth": case.ground_truth,
        },
    )


def reference_calls(case: BfclCase) -> tuple[tuple[ToolCall, ...], ...]:
    """The ground truth as structured calls (positional arguments named from the simulator's signature)."""
    owners = {doc["name"]: cls for cls in case.entry["involved_classes"] for doc in data.func_docs(cls)}
    turns = []
    for turn, strings in enumerate(case.ground_truth):
        calls = []
        for k, text in enumerate(strings):
            name = text.split("(", 1)[0].strip()
            name, arguments = parse_reference_call(text, data.method_parameters(owners[name], name))
            calls.append(ToolCall(id=f"ref-{turn}-{k}", name=name, arguments=arguments))
        turns.append(tuple(calls))
    return tuple(turns)


def reference_solution(case: BfclCase, turns: Sequence[UserTurn]) -> tuple[ReferenceStep, ...]:
    """Replay the ground truth once, recording for each call the values it copies from earlier output.

    Each guess is vetted by the official checker: a need is kept only with a guess that, swapped into
    an otherwise correct replay, fails the task (see `_fails_with`).
    """
    calls = reference_calls(case)
    flat = [(turn, call) for turn, turn_calls in enumerate(calls) for call in turn_calls]
    schemas = {spec.name: json.dumps(spec.openai_schema()) for tools in case.turn_tools for spec in tools}
    env = BfclEnvironment(case)
    steps: list[ReferenceStep] = []
    outputs: list[str] = []
    classes: list[str] = []
    try:
        for turn, turn_calls in enumerate(calls):
            user_texts = [t.content for t in turns[: turn + 1]]
            specs = {spec.name: spec for spec in case.tools(turn)}
            known = [schemas[name] for name in specs]
            for call in turn_calls:
                needs = find_needs(
                    call,
                    user_texts=user_texts,
                    tool_outputs=outputs,
                    known_texts=known,
                    output_classes=classes,
                    # Every guess is vetted by the official checker, so short values and common words the
                    # agent must copy from output are needs too (a wrong "5" or "high" fails the task).
                    min_len=1,
                    skip_common=False,
                    accept=functools.partial(_fails_with, case, flat, len(outputs)),
                )
                steps.append(ReferenceStep(turn=turn, call=call, needs=needs))
                output = env.call(call, turn)
                outputs.append(output.content)
                classes.append(classify_result(specs.get(call.name), call, output).value)
            steps.append(ReferenceStep(turn=turn, answer=""))
    finally:
        env.close()
    return tuple(steps)


def _fails_with(case: BfclCase, flat: Sequence[tuple[int, ToolCall]], index: int, need: Need) -> bool:
    """Whether the ground truth with call `index` given `need.guess` fails the official checker.

    Checked on the turns up to the guessed call's first (where a wrong value almost always shows),
    and on the whole task only when that prefix still passes.
    """
    turn_of_guess = flat[index][0]
    prefix = dataclasses.replace(
        case,
        ground_truth=case.ground_truth[: turn_of_guess + 1],
        turn_tools=case.turn_tools[: turn_of_guess + 1],
    )
    return _replay_fails(prefix, flat, index, need) or _replay_fails(case, flat, index, need)


def _replay_fails(case: BfclCase, flat: Sequence[tuple[int, ToolCall]], index: int, need: Need) -> bool:
    assert need.argument is not None  # find_needs guesses an argument's value, so it names one
    env = BfclEnvironment(case)
    try:
        for position, (turn, call) in enumerate(flat):
            if turn >= len(case.ground_truth):
                break
            if position == index:
                call = dataclasses.replace(call, arguments={**call.arguments, need.argument: need.guess})
            env.call(call, turn)
        return not env.check([""] * len(case.ground_truth)).passed
    finally:
        env.close()
