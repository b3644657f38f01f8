"""The built-in suite: deterministic, sized as promised, solvable by its reference, and discriminative.

Discriminative means: for every literal a reference step needs, an agent that cannot see it (the line
that carried it was dropped from every tool output) and falls back the way `optimizer.agent.reference`
does (guess / skip / repeat the write) fails the checker, for a reason that names the fault.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from dataclasses import dataclass, field

import pytest
from pydantic import TypeAdapter, ValidationError

from optimizer.tokens import count_tokens
from optimizer.world import (
    CheckResult,
    NeedKind,
    RetentionClass,
    Task,
    ToolCall,
    ToolOutput,
    available_suites,
    classify_result,
)
from tasks.builtin import BuiltinSuite
from tasks.builtin.families import FAMILIES
from tasks.builtin.tools import SPECS

SUITE = BuiltinSuite().load()
FAMILY_NAMES = [f.name for f in FAMILIES]
SKIPPING = (NeedKind.RULE, NeedKind.PAGE, NeedKind.ERROR)


@dataclass
class Run:
    result: CheckResult
    answer: str | None
    outputs: list[tuple[ToolCall, ToolOutput]] = field(default_factory=list)
    deviations: list[tuple[NeedKind, str]] = field(default_factory=list)


def simulate(task: Task, hidden: str | None = None) -> Run:
    """Mirror of the reference agent's policy over a context where every output line with `hidden` is gone."""
    env = task.make_env()
    context = [task.instruction]
    run = Run(CheckResult(False), None)

    def do(call: ToolCall) -> None:
        output = env.call(call, 0)
        run.outputs.append((call, output))
        context.append(json.dumps({"tool": call.name, "arguments": dict(call.arguments)}, ensure_ascii=False))
        shown = output.content
        if hidden is not None:
            shown = "\n".join(line for line in shown.split("\n") if hidden not in line)
        context.append(shown)

    steps = task.reference or ()
    cursor, repeated = 0, set()
    while cursor < len(steps):
        step = steps[cursor]
        text = "\n".join(context)
        missing = [n for n in step.needs if n.literal not in text]
        skip = next((n for n in missing if n.kind in SKIPPING), None)
        if skip is not None:
            run.deviations.append((skip.kind, "skip"))
            cursor += 1
            continue
        again = next((n for n in missing if n.kind is NeedKind.RECEIPT and n.repeat is not None), None)
        if again is not None and cursor not in repeated:
            repeated.add(cursor)
            run.deviations.append((again.kind, "repeat"))
            do(ToolCall(f"sim-{len(run.outputs)}", again.repeat.name, dict(again.repeat.arguments)))
            continue
        cursor += 1
        guesses = [n for n in missing if n.kind is NeedKind.VALUE]
        run.deviations += [(n.kind, "guess") for n in guesses]
        if step.call is None:
            answer = step.answer or ""
            for need in guesses:
                answer = answer.replace(need.literal, str(need.guess)) if need.argument is None else answer
            run.answer = answer
            break
        arguments = dict(step.call.arguments)
        for need in guesses:
            if need.argument is not None:
                arguments[need.argument] = need.guess
        do(ToolCall(f"sim-{len(run.outputs)}", step.call.name, arguments))
    run.result = env.check([run.answer])
    return run


def execute(task: Task) -> tuple[CheckResult, list[tuple[ToolCall, ToolOutput]]]:
    """The reference executed as written, straight against the environment."""
    env = task.make_env()
    outputs = [(s.call, env.call(s.call, 0)) for s in task.reference or () if s.call is not None]
    answer = next(s.answer for s in reversed(task.reference or ()) if s.call is None)
    return env.check([answer]), outputs


def first_needs(task: Task) -> list[tuple[int, object]]:
    """(step index, need) for the first step at which each literal is needed."""
    seen: set[str] = set()
    out = []
    for i, step in enumerate(task.reference or ()):
        for need in step.needs:
            if need.literal not in seen:
                seen.add(need.literal)
                out.append((i, need))
    return out


def family_tasks(name: str) -> list[Task]:
    return [t for t in SUITE.tasks if t.meta["family"] == name]


_EXECUTED: dict[str, tuple[CheckResult, list[tuple[ToolCall, ToolOutput]]]] = {}


def executed(task: Task) -> tuple[CheckResult, list[tuple[ToolCall, ToolOutput]]]:
    if task.id not in _EXECUTED:
        _EXECUTED[task.id] = execute(task)
    return _EXECUTED[task.id]


# ------------------------------------------------------------------------------------------ suite shape


def test_default_suite_has_64_tasks_in_a_disjoint_50_50_split() -> None:
    assert len(SUITE.tasks) == 64
    ids = {t.id for t in SUITE.tasks}
    assert SUITE.train_ids | SUITE.test_ids == ids
    assert not SUITE.train_ids & SUITE.test_ids
    assert len(SUITE.train_ids) == len(SUITE.test_ids) == 32
    assert set(Counter(t.meta["family"] for t in SUITE.tasks)) == set(FAMILY_NAMES)
    assert min(Counter(t.meta["family"] for t in SUITE.tasks).values()) >= 9


def _fingerprint(task: Task) -> str:
    return repr((task.id, task.suite, task.turns, task.reference, task.max_steps_per_turn, sorted(task.meta.items())))


def test_same_seed_gives_byte_identical_tasks_and_outputs() -> None:
    again = BuiltinSuite().load()
    assert [_fingerprint(t) for t in SUITE.tasks] == [_fingerprint(t) for t in again.tasks]
    assert (again.train_ids, again.test_ids) == (SUITE.train_ids, SUITE.test_ids)
    for first, second in zip(SUITE.tasks[::5], again.tasks[::5], strict=True):
        digest = [hashlib.sha256(repr(o).encode()).hexdigest() for _, o in executed(first)[1]]
        assert digest == [hashlib.sha256(repr(o).encode()).hexdigest() for _, o in execute(second)[1]]


def test_another_seed_gives_other_tasks() -> None:
    other = BuiltinSuite(seed=1).load()
    assert [t.id for t in other.tasks] == [t.id for t in SUITE.tasks]
    assert sum(_fingerprint(a) != _fingerprint(b) for a, b in zip(other.tasks, SUITE.tasks, strict=True)) == 64


def test_generation_is_fast_and_lazy() -> None:
    start = time.perf_counter()
    BuiltinSuite(seed=3).load()
    assert time.perf_counter() - start < 2.0


def test_meta_describes_each_task() -> None:
    for task in SUITE.tasks:
        meta = task.meta
        assert meta["family"] in FAMILY_NAMES and meta["difficulty"] in ("easy", "medium", "hard")
        assert meta["steps"] == len(task.reference or ())
        assert set(meta["classes"]) <= {c.value for c in RetentionClass}
        assert isinstance(meta["max_output_tokens"], int)
    assert {t.meta["difficulty"] for t in SUITE.tasks} == {"easy", "medium", "hard"}


def test_step_counts_are_within_2_to_15() -> None:
    counts = [len(t.reference or ()) for t in SUITE.tasks]
    assert min(counts) == 2 and max(counts) == 15
    assert all(len(t.reference or ()) + 4 <= t.max_steps_per_turn for t in SUITE.tasks)


def test_output_sizes_span_50_to_8000_tokens_and_match_meta() -> None:
    sizes = []
    for task in SUITE.tasks:
        tokens = [count_tokens(o.content) for _, o in executed(task)[1]]
        sizes += tokens
        assert max(tokens) <= task.meta["max_output_tokens"] <= 8000, task.id
        assert max(tokens) >= 0.85 * task.meta["max_output_tokens"], (task.id, max(tokens))
    assert min(sizes) >= 50 and min(sizes) < 100
    assert max(sizes) > 7000


def test_fact_positions_cover_head_middle_and_tail_in_every_family() -> None:
    for name in FAMILY_NAMES:
        seen = set()
        for task in family_tasks(name):
            seen.add(task.meta.get("position"))
            seen.update(task.meta.get("positions", ()))
            seen.update(task.meta.get("rule_positions", {}).values())
        assert {"head", "middle", "tail"} <= seen, name


def test_every_retention_class_and_need_kind_is_exercised() -> None:
    classes = {c for t in SUITE.tasks for c in t.meta["classes"]}
    assert classes == {"skill", "static", "error_partial", "dynamic_state", "write_receipt"}
    kinds = {k for t in SUITE.tasks for k in t.meta["need_kinds"]}
    assert kinds == {k.value for k in NeedKind}


def test_meta_classes_are_what_the_runtime_reports() -> None:
    for task in SUITE.tasks:
        observed = {classify_result(SPECS[c.name], c, o).value for c, o in executed(task)[1]}
        assert sorted(observed) == task.meta["classes"], task.id


# --------------------------------------------------------------------------------- reference and needs


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_reference_executed_directly_passes(family: str) -> None:
    for task in family_tasks(family):
        result, outputs = executed(task)
        assert result.passed, (task.id, result.reasons)
        calls = [i for i, s in enumerate(task.reference or ()) if s.call is not None]
        errors = [i for i, (_, o) in zip(calls, outputs, strict=True) if o.is_error]
        assert errors == task.meta["error_steps"], task.id


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_reference_agent_on_full_context_passes_without_deviating(family: str) -> None:
    for task in family_tasks(family):
        run = simulate(task)
        assert run.result.passed, (task.id, run.result.reasons)
        assert run.deviations == [], task.id


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_literals_first_appear_in_their_source_output(family: str) -> None:
    for task in family_tasks(family):
        env = task.make_env()
        described = json.dumps([[s.name, s.description, s.parameters] for s in env.tools(0)])
        outputs = executed(task)[1]
        calls_before = [i for i, s in enumerate(task.reference or ()) if s.call is not None]
        for index, need in first_needs(task):
            assert need.literal not in task.instruction, (task.id, need.literal)
            assert need.literal not in described, (task.id, need.literal)
            before = outputs[: sum(1 for i in calls_before if i < index)]
            holders = [(c, o) for c, o in before if need.literal in o.content]
            assert holders, (task.id, need.literal)
            if need.kind is not NeedKind.VALUE:
                assert len(holders) == 1, (task.id, need.literal)
            call, output = holders[0]
            assert classify_result(SPECS[call.name], call, output).value == need.source_class, (task.id, need)
            if need.kind in (NeedKind.RECEIPT, NeedKind.PAGE, NeedKind.ERROR):
                assert any(need.literal in line for line in output.must_keep), (task.id, need.literal)


def _kinds_in(family: str) -> list[NeedKind]:
    return sorted({n.kind for t in family_tasks(family) for _, n in first_needs(t)})


@pytest.mark.parametrize(("family", "kind"), [(f, k) for f in FAMILY_NAMES for k in _kinds_in(f)], ids=lambda v: str(v))
def test_losing_a_needed_literal_fails_the_task(family: str, kind: NeedKind) -> None:
    checked = 0
    for task in family_tasks(family):
        for _, need in first_needs(task):
            if need.kind is not kind:
                continue
            run = simulate(task, hidden=need.literal)
            checked += 1
            label = (task.id, need.kind.value, need.literal)
            assert run.deviations, label
            assert not run.result.passed, label
            assert run.result.reasons, label
            if kind is NeedKind.RECEIPT:
                assert any("duplicate write" in b for b in run.result.blocking), (label, run.result)
            if kind is NeedKind.RULE:
                rule_id = need.literal.split(":", 1)[0]  # the need is the whole clause; the checker cites its id
                assert need.literal.startswith("RULE-") and len(need.literal) > len(rule_id) + 20, label
                assert any(rule_id in b for b in run.result.blocking), (label, run.result)
            if kind is NeedKind.ERROR:
                assert any("finish claimed without required step" in b for b in run.result.blocking), label
    assert checked


# ------------------------------------------------------------------------------------ checker and env


def test_a_finish_without_the_required_write_is_blocking() -> None:
    for task in SUITE.tasks:
        if "write_receipt" not in task.meta["classes"]:
            continue
        env = task.make_env()
        result = env.check([task.reference[-1].answer])
        assert not result.passed
        assert any("finish claimed without required step" in b for b in result.blocking), task.id


def test_no_answer_fails() -> None:
    task = SUITE.tasks[0]
    env = task.make_env()
    for step in task.reference or ():
        if step.call is not None:
            env.call(step.call, 0)
    assert not env.check([None]).passed
    assert not env.check([]).passed


def test_bad_calls_come_back_as_errors() -> None:
    task = family_tasks("refund")[0]
    env = task.make_env()
    for call in (
        ToolCall("x1", "drop_database", {}),
        ToolCall("x2", "get_order", {}),
        ToolCall("x3", "get_order", {"order_id": 42}),
        ToolCall("x4", "get_order", {"order_id": "ORD-1", "extra": True}),
        ToolCall("x5", "issue_refund", {"order_id": "ORD-00000", "line_id": "LN-1", "amount": 1.0}),
        ToolCall("x6", "read_file", {"path": "skills/nope/SKILL.md"}),
    ):
        output = env.call(call, 0)
        assert output.is_error and output.must_keep and output.must_keep[0] in output.content, call
    assert env.writes == []


# ------------------------------------------------------------------------------------------ injections


def test_planted_injections_are_listed_and_stay_static() -> None:
    planted = [t for t in SUITE.tasks if t.meta["planted_injections"]]
    assert len(planted) == 8
    assert {t.meta["family"] for t in planted} == set(FAMILY_NAMES)
    for task in planted:
        for line in task.meta["planted_injections"]:
            holders = [(c, o) for c, o in executed(task)[1] if line in o.content]
            assert holders, (task.id, line)
            for call, output in holders:
                assert classify_result(SPECS[call.name], call, output) is RetentionClass.STATIC


def test_a_doc_claiming_to_be_a_skill_is_static_and_a_skill_path_is_skill() -> None:
    task = next(t for t in family_tasks("refund") if t.meta["planted_injections"])
    env = task.make_env()
    spec = SPECS["read_file"]
    doc = ToolCall("d", "read_file", {"path": "docs/refunds/notes.md"})
    output = env.call(doc, 0)
    assert (
        "this content is a skill" in output.content
        or "[retention: skill]" in output.content
        or any(line in output.content for line in task.meta["planted_injections"])
    )
    assert classify_result(spec, doc, output) is RetentionClass.STATIC
    skill = ToolCall("s", "read_file", {"path": "skills/refunds/SKILL.md"})
    assert classify_result(spec, skill, env.call(skill, 0)) is RetentionClass.SKILL


def test_injection_switch_changes_outputs_only() -> None:
    off = BuiltinSuite(injections="off").load()
    every = BuiltinSuite(injections="all").load()
    assert not any(t.meta["planted_injections"] for t in off.tasks)
    assert all(t.meta["planted_injections"] for t in every.tasks)
    for a, b in zip(off.tasks, every.tasks, strict=True):
        assert (a.id, a.turns, a.reference) == (b.id, b.turns, b.reference)
    for task in every.tasks[:14]:
        assert simulate(task).result.passed, task.id


# ------------------------------------------------------------------------------------------ config


def test_config_round_trips_and_rejects_unknown_fields() -> None:
    config = BuiltinSuite(seed=5, n_tasks=14, injections="off")
    assert BuiltinSuite.model_validate(config.model_dump()) == config
    with pytest.raises(ValidationError):
        BuiltinSuite(colour="red")
    with pytest.raises(ValidationError):
        BuiltinSuite(n_tasks=0)
    assert "Seed of the whole suite" in (BuiltinSuite.model_fields["seed"].description or "")


def test_registered_and_part_of_the_suite_union() -> None:
    from tasks import SuiteConfig

    assert available_suites()["builtin"]().load().name == "builtin"
    config = TypeAdapter(SuiteConfig).validate_python({"type": "builtin", "n_tasks": 7})
    assert isinstance(config, BuiltinSuite)
    small = config.load()
    assert [t.meta["family"] for t in small.tasks] == FAMILY_NAMES


def test_a_repeated_write_is_never_a_gated_step() -> None:
    """If a RECEIPT's `repeat` were skipped under a lost rule / page / error, the agent would make that write
    late through the repeat and hide the skip; such receipt ids are VALUE needs instead."""
    for task in SUITE.tasks:
        steps = task.reference or ()
        for step in steps:
            for need in step.needs:
                if need.kind is not NeedKind.RECEIPT:
                    continue
                source = [s for s in steps if s.call is not None and s.call == need.repeat]
                assert len(source) == 1, (task.id, need.literal)
                assert not any(n.kind in SKIPPING for n in source[0].needs), (task.id, need.literal)


def test_guesses_are_plausible_but_wrong() -> None:
    for task in SUITE.tasks:
        for step in task.reference or ():
            for need in step.needs:
                if need.kind is not NeedKind.VALUE:
                    continue
                label = (task.id, need.literal, need.guess)
                if need.argument is None:  # the agent swaps the literal (or what it decides) for the guess
                    shown = need.shown_as or need.literal
                    assert shown in (step.answer or ""), label
                    assert isinstance(need.guess, str) and need.guess != shown, label
                    assert need.guess[:3] == shown[:3] or need.guess.split()[1:] == shown.split()[1:], label
                    continue
                written = step.call.arguments[need.argument]
                assert type(need.guess) is type(written) and need.guess != written, label
                if isinstance(written, str) and written == need.literal:
                    assert len(need.guess) == len(written) and need.guess[:3] == written[:3], label


def test_another_seed_with_injections_everywhere_keeps_every_invariant() -> None:
    """A second seed, with planted text in every task, must hold up the same way as the default one."""
    for task in BuiltinSuite(seed=1, injections="all").load().tasks:
        run = simulate(task)
        assert run.result.passed and not run.deviations, (task.id, run.result.reasons)
        tokens = [count_tokens(o.content) for _, o in run.outputs]
        assert min(tokens) >= 50 and max(tokens) >= 0.85 * task.meta["max_output_tokens"], task.id
        assert max(tokens) <= task.meta["max_output_tokens"], task.id
        for _, need in first_needs(task):
            lost = simulate(task, hidden=need.literal)
            assert lost.deviations and not lost.result.passed, (task.id, need.literal)
