"""BFCL multi-turn adapter: replay, scoring, safety, isolation, retention metadata.

The full ground-truth sweeps run every task of a category through the environment and the official
checker; they take a few seconds per category (loading includes vetting every need's guess).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pydantic import TypeAdapter, ValidationError

from optimizer.errors import AconError
from optimizer.tokens import count_tokens
from optimizer.world.retention import RetentionClass
from optimizer.world.suite import available_suites
from optimizer.world.task import NeedKind, Task
from optimizer.world.tool import ToolCall, ToolOutput, classify_result
from tasks.bfcl import BfclSuite, install
from tasks.bfcl import data as bfcl_data
from tasks.bfcl.calls import UnsafeCall, call_string, validate_call
from tasks.bfcl.env import BfclEnvironment, new_tag
from tasks.bfcl.retention import RETENTION, retention_of

CATEGORIES = ("multi_turn_base", "multi_turn_long_context", "multi_turn_miss_func", "multi_turn_miss_param")
REPO = Path(__file__).resolve().parents[2]
requires_bfcl = pytest.mark.skipif(not install.ready(), reason="bfcl-eval not installed (acon setup)")


@pytest.fixture(scope="module")
def suites():
    if not install.ready():
        pytest.skip("bfcl-eval not installed (acon setup)")
    loaded: dict = {}

    def get(category: str):
        if category not in loaded:
            loaded[category] = BfclSuite(category=category).load()
        return loaded[category]

    return get


def replay(task: Task, swap=None):
    """Run the reference through the task's environment; returns (env, outputs, verdict)."""
    env = task.make_env()
    outputs: list[ToolOutput] = []
    answers: list[str | None] = []
    for index, step in enumerate(task.reference):
        if step.call is None:
            answers.append(step.answer)
            continue
        call = swap(index, step.call) if swap else step.call
        outputs.append(env.call(call, step.turn))
    return env, outputs, env.check(answers)


def execute_multi_turn_func_call(*args, **kwargs):
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call

    return execute_multi_turn_func_call(*args, **kwargs)


def cached() -> dict:
    """BFCL's module globals, where it caches simulator instances."""
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    return vars(multi_turn_utils)


def bfcl_state(env: BfclEnvironment) -> dict:
    """Public state of the episode's simulator instances, read through BFCL's own instance cache."""
    _, instances = execute_multi_turn_func_call(
        [],
        env.case.entry["initial_config"],
        env.case.entry["involved_classes"],
        env.tag,
        env.case.id,
        long_context=env.case.long_context,
    )
    return {
        name: copy.deepcopy({k: v for k, v in vars(i).items() if not k.startswith("_")})
        for name, i in instances.items()
    }


def cached_keys() -> set[str]:
    return {key for key in cached() if key.startswith("acon_")}


# --- ground truth through the environment ---------------------------------------------------------


@pytest.mark.parametrize("category", CATEGORIES)
def test_ground_truth_replay_passes_every_task_and_matches_bfcls_own_executor(suites, category):
    suite = suites(category)
    assert len(suite.tasks) == (199 if category == "multi_turn_miss_func" else 200)
    failures = []
    for task in suite.tasks:
        env, outputs, verdict = replay(task)
        # The environment's direct dispatch shows the agent exactly what BFCL's eval-based executor shows.
        tag = new_tag()
        official = []
        for turn in task.meta["ground_truth"]:
            results, _ = execute_multi_turn_func_call(
                list(turn),
                env.case.entry["initial_config"],
                env.case.entry["involved_classes"],
                tag,
                task.id,
                long_context=env.case.long_context,
            )
            official.extend(results)
        for key in [k for k in cached() if k.startswith(tag)]:
            del cached()[key]
        env.close()
        if not verdict.passed or [o.content for o in outputs] != official:
            failures.append((task.id, verdict.reasons))
    assert failures == []
    assert cached_keys() == set()


@pytest.mark.parametrize("category", ["multi_turn_base", "multi_turn_long_context"])
def test_every_need_is_visible_on_full_context_and_its_guess_fails_the_checker(suites, category):
    tasks = suites(category).tasks
    checked = 0
    for task in tasks:
        env, outputs, _ = replay(task)
        env.close()
        texts = [o.content for o in outputs]
        calls_before = 0
        for index, step in enumerate(task.reference):
            for need in step.needs:
                assert need.kind is NeedKind.VALUE
                assert any(need.literal in t for t in texts[:calls_before]), (task.id, need)
                typed = re.compile(rf"(?<!\w){re.escape(need.literal)}(?!\w)", re.IGNORECASE)
                assert not any(typed.search(turn.content) for turn in task.turns[: step.turn + 1])
                if checked % 4 == 0:  # every 4th need: swapping in its guess must fail the task

                    def swap(i, call, index=index, need=need):
                        if i != index:
                            return call
                        return dataclasses.replace(call, arguments={**call.arguments, need.argument: need.guess})

                    env, _, verdict = replay(task, swap)
                    env.close()
                    assert not verdict.passed, (task.id, need)
                checked += 1
            calls_before += step.call is not None
    assert checked > 200  # BFCL tasks copy ids, prices, symbols from earlier outputs all the time


def test_reference_has_one_step_per_call_and_an_answer_closing_each_turn(suites):
    for task in suites("multi_turn_miss_param").tasks[:50]:
        truth = task.meta["ground_truth"]
        assert len(task.turns) == len(truth)
        for turn, calls in enumerate(truth):
            steps = [s for s in task.reference if s.turn == turn]
            assert [s.call is None for s in steps] == [False] * len(calls) + [True]
            assert steps[-1].answer == ""


# --- scoring ---------------------------------------------------------------------------------------


def test_corrupting_one_argument_fails_with_the_official_reason(suites):
    task = suites("multi_turn_base").task("multi_turn_base_0")

    def corrupt(_, call):
        if call.name == "diff":
            return dataclasses.replace(call, arguments={**call.arguments, "file_name1": "final_report.pdf_wrong"})
        return call

    env, _, verdict = replay(task, corrupt)
    env.close()
    assert not verdict.passed
    assert verdict.reasons[0].startswith("multi_turn:execution_response_mismatch")

    task = suites("multi_turn_long_context").task("multi_turn_long_context_141")

    def wrong_receiver(_, call):
        if call.name == "send_message":
            return dataclasses.replace(call, arguments={**call.arguments, "receiver_id": "USR005_wrong"})
        return call

    env, _, verdict = replay(task, wrong_receiver)
    env.close()
    assert not verdict.passed
    assert verdict.reasons[0].startswith("multi_turn:instance_state_mismatch")
    assert any(r.startswith("state differs in: ") for r in verdict.reasons)


def test_unfinished_turns_fail_as_force_terminated(suites):
    task = suites("multi_turn_base").task("multi_turn_base_0")
    env, _, _ = replay(task)
    assert env.check([""] * (len(task.turns) - 1)).reasons[0].startswith("multi_turn:force_terminated")
    assert not env.check([""] * (len(task.turns) - 1) + [None]).passed
    assert env.check([""] * len(task.turns)).passed
    env.close()


def test_extra_read_calls_do_not_fail_a_correct_episode(suites):
    task = suites("multi_turn_base").task("multi_turn_base_0")
    env = task.make_env()
    for step in task.reference:
        if step.call is not None:
            env.call(step.call, step.turn)
            env.call(ToolCall("probe", "pwd", {}), step.turn)
    assert env.check([""] * len(task.turns)).passed
    env.close()


# --- safety ----------------------------------------------------------------------------------------


class _Evil:
    def __init__(self, code: str) -> None:
        self.code = code

    def __repr__(self) -> str:
        return self.code


def test_planted_code_is_refused_before_anything_runs(suites, tmp_path):
    task = suites("multi_turn_base").task("multi_turn_base_0")
    env = task.make_env()
    first = next(s for s in task.reference if s.call is not None)
    env.call(first.call, 0)
    before = bfcl_state(env)
    decoded = env.decoded
    marker = tmp_path / "pwned"
    planted = [
        ToolCall("x", f"__import__('os').system('touch {marker}') or pwd", {}),
        ToolCall("x", "__import__('os').system", {"command": f"touch {marker}"}),
        ToolCall("x", "cat", {"file_name": _Evil(f"__import__('os').system('touch {marker}')")}),
        ToolCall("x", "cat", {"file_name": _Evil("open('/etc/passwd').read()")}),
        ToolCall("x", "ls", {"a": _Evil("True if __import__('os').system('x') else False")}),
        ToolCall("x", "eval", {"source": "1"}),
        ToolCall("x", "_load_scenario", {"scenario": {}}),
        ToolCall("x", "cat", {"file_name)\n__import__('os').system('x')#": 1}),
    ]
    for call in planted:
        output = env.call(call, 0)
        assert output.is_error and output.content.startswith("Error: call refused"), call
        assert output.must_keep == (output.content,)
    assert not marker.exists()
    assert bfcl_state(env) == before
    assert env.decoded == decoded
    env.close()


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').getcwd()",
        "os.system('x')",
        "cat(file_name=open('x').read())",
        "cat(file_name=x)",
        "cat(file_name='a' + 'b')",
        "cat(file_name=f'{x}')",
        "cat(file_name=[i for i in ()])",
        "cat(file_name=lambda: 1)",
        "cat(**{'file_name': 'a'})",
        "cat('a')",
        "cat(file_name='a', file_name='b')",
        "cat(file_name='a'); pwd()",
        "cat(file_name=b'a')",
        "cat(file_name=1j)",
        "(cat)(file_name='a')",
        "cat",
        "unknown_tool(file_name='a')",
    ],
)
def test_validator_refuses_anything_but_a_literal_call_of_a_visible_tool(text):
    with pytest.raises(UnsafeCall):
        validate_call(text, {"cat", "pwd"})


def test_validator_accepts_what_structured_calls_produce():
    arguments = {"a": -1.5, "b": [1, "x", None, True], "c": {"k": [-2, {"z": "q'\"\\n"}]}, "d": "é"}
    text = call_string("cat", arguments)
    assert validate_call(text, {"cat"}) == ("cat", arguments)


# --- tools, miss_func, isolation ---------------------------------------------------------------------


def test_miss_func_hides_held_out_tools_until_their_turn(suites):
    suite = suites("multi_turn_miss_func")
    task = suite.task("multi_turn_miss_func_0")
    ((reveal, held),) = task.meta["missed_function"].items()
    assert held == ("sort",)
    env = task.make_env()
    for turn in range(len(task.turns)):
        names = {tool.name for tool in env.tools(turn)}
        assert ("sort" in names) == (turn >= reveal)
    assert task.turns[reveal].content == "I have updated some more functions you can choose from. What about now?"
    early = env.call(ToolCall("x", "sort", {"file_name": "final_report.pdf"}), reveal - 1)
    assert early.is_error and "not one of the tools available" in early.content
    assert env.decoded[reveal - 1] == []
    assert not env.call(ToolCall("x", "cd", {"folder": "document"}), reveal).is_error
    assert not env.call(ToolCall("x", "sort", {"file_name": "final_report.pdf"}), reveal).is_error
    env.close()
    # The one task whose ground truth uses a function before BFCL offers it is left out.
    assert "multi_turn_miss_func_49" not in {t.id for t in suite.tasks}


def test_state_does_not_leak_between_episodes_and_globals_are_freed(suites):
    task = suites("multi_turn_base").task("multi_turn_base_0")
    first = task.make_env()
    assert not first.call(ToolCall("x", "cd", {"folder": "document"}), 0).is_error
    assert not first.call(ToolCall("x", "mkdir", {"dir_name": "leak_probe"}), 0).is_error
    assert "leak_probe" in first.call(ToolCall("x", "ls", {}), 0).content
    second = task.make_env()
    assert not second.call(ToolCall("x", "cd", {"folder": "document"}), 0).is_error
    assert "leak_probe" not in second.call(ToolCall("x", "ls", {}), 0).content
    assert first.tag != second.tag
    first.close()
    second.close()
    assert cached_keys() == set()


def test_memory_stays_flat_over_many_episodes(suites):
    import gc
    import tracemalloc

    task = suites("multi_turn_long_context").task("multi_turn_long_context_141")

    def episodes(n: int) -> None:
        for _ in range(n):
            env, _, verdict = replay(task)
            assert verdict.passed
            env.close()

    episodes(3)
    gc.collect()
    tracemalloc.start()
    start = tracemalloc.get_traced_memory()[0]
    episodes(40)
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - start
    tracemalloc.stop()
    assert cached_keys() == set()
    assert grown < 2_000_000, grown
    # An environment dropped without close() is cleaned up when collected.
    env = task.make_env()
    env.call(ToolCall("x", "get_user_id", {"user": "Alice"}), 0)
    assert cached_keys()
    del env
    gc.collect()
    assert cached_keys() == set()


def test_concurrent_episodes_stay_isolated(suites):
    from concurrent.futures import ThreadPoolExecutor

    tasks = suites("multi_turn_base").tasks[:60]

    def run(task):
        env, outputs, verdict = replay(task)
        env.close()
        return task.id, verdict.passed, [o.content for o in outputs]

    sequential = {task_id: (ok, out) for task_id, ok, out in map(run, tasks)}
    with ThreadPoolExecutor(max_workers=4) as pool:
        parallel = {task_id: (ok, out) for task_id, ok, out in pool.map(run, tasks * 3)}
    assert parallel == sequential and all(ok for ok, _ in parallel.values())
    assert cached_keys() == set()


# --- retention metadata and error status ------------------------------------------------------------


def test_retention_table_classifies_writes_reads_and_unknowns(suites):
    task = suites("multi_turn_base").task("multi_turn_base_0")
    specs = {tool.name: tool for tool in task.make_env().tools(0)}
    mkdir = specs["mkdir"]
    assert mkdir.side_effect and mkdir.retention_class is RetentionClass.WRITE_RECEIPT
    call = ToolCall("x", "mkdir", {"dir_name": "a"})
    assert classify_result(mkdir, call, ToolOutput("{}")) is RetentionClass.WRITE_RECEIPT
    assert classify_result(mkdir, call, ToolOutput("{}", is_error=True)) is RetentionClass.ERROR_PARTIAL
    assert retention_of("send_message") == (RetentionClass.WRITE_RECEIPT, True)
    assert retention_of("place_order") == (RetentionClass.WRITE_RECEIPT, True)
    assert retention_of("get_account_info") == (RetentionClass.DYNAMIC_STATE, False)
    assert retention_of("displayCarStatus") == (RetentionClass.DYNAMIC_STATE, False)
    assert retention_of("cat") == (RetentionClass.STATIC, False)
    assert retention_of("some_future_function") == (RetentionClass.UNKNOWN, False)


@requires_bfcl
def test_retention_table_covers_every_function_once():
    from bfcl_eval.constants.executable_backend_config import MULTI_TURN_FUNC_DOC_FILE_MAPPING

    classes = [c for c in MULTI_TURN_FUNC_DOC_FILE_MAPPING if not c.startswith(("Memory", "WebSearch"))]
    documented = {doc["name"] for c in classes for doc in bfcl_data.func_docs(c)}
    assert documented == set(RETENTION)
    from tasks.bfcl import retention

    listed = (retention._SIDE_EFFECT + retention._DYNAMIC_STATE + retention._STATIC).split()
    assert len(listed) == len(set(listed))


def test_every_function_that_changes_public_state_is_registered_as_a_side_effect(suites):
    changed = set()
    for task in suites("multi_turn_base").tasks:
        env = task.make_env()
        for step in task.reference:
            if step.call is None:
                continue
            before = bfcl_state(env)
            env.call(step.call, step.turn)
            if bfcl_state(env) != before:
                changed.add(step.call.name)
        env.close()
    assert len(changed) > 30
    assert sorted(name for name in changed if not retention_of(name)[1]) == []


def test_errors_come_from_runtime_status_not_from_text(suites):
    task = suites("multi_turn_base").task("multi_turn_base_0")
    env = task.make_env()
    missing = env.call(ToolCall("x", "cd", {"folder": "no_such_dir"}), 0)
    assert missing.is_error and missing.must_keep and missing.must_keep[0] in missing.content
    assert missing.must_keep[0].startswith('"error": ')
    raised = env.call(ToolCall("x", "cat", {"no_such_argument": "x"}), 0)
    assert raised.is_error and raised.content.startswith("Error during execution: ")
    # A successful result that talks about errors is not an error.
    assert not env.call(ToolCall("x", "touch", {"file_name": "e.txt"}), 0).is_error
    assert not env.call(ToolCall("x", "echo", {"content": "Error: disk full", "file_name": "e.txt"}), 0).is_error
    said = env.call(ToolCall("x", "cat", {"file_name": "e.txt"}), 0)
    assert "Error: disk full" in said.content and not said.is_error
    env.close()


def test_schemas_use_json_schema_types(suites):
    gorilla = {"dict", "float", "tuple", "any", "list", "bool"}

    def types(node):
        if isinstance(node, dict):
            if isinstance(node.get("type"), str):
                yield node["type"]
            for value in node.values():
                yield from types(value)

    for task in suites("multi_turn_base").tasks[:40]:
        for tool in task.make_env().tools(0):
            assert tool.parameters["type"] == "object"
            assert not set(types(tool.parameters["properties"])) & gorilla, tool.name
            json.dumps(tool.openai_schema())


# --- suite config and loading ------------------------------------------------------------------------


@requires_bfcl
def test_suite_config_round_trips_registers_and_splits_deterministically():
    from tasks import SuiteConfig

    adapter = TypeAdapter(SuiteConfig)
    source = adapter.validate_python({"type": "bfcl", "category": "multi_turn_base", "limit": 10, "seed": 3})
    assert isinstance(source, BfclSuite) and adapter.validate_json(source.model_dump_json()) == source
    for bad in (
        {"type": "bfcl", "category": "multi_turn_web"},
        {"type": "bfcl", "limit": 0},
        {"type": "bfcl", "x": 1},
    ):
        with pytest.raises(ValidationError):
            adapter.validate_python(bad)
    assert BfclSuite.model_fields["category"].description  # field docstrings are rendered
    names = available_suites()
    assert {"bfcl_base", "bfcl_long_context", "bfcl_miss_func", "bfcl_miss_param"} <= set(names)
    assert names["bfcl_base"]().category == "multi_turn_base"
    suite = source.load()
    again = BfclSuite(category="multi_turn_base", limit=10, seed=3).load()
    assert suite.name == "bfcl_base" and len(suite.tasks) == 10
    assert (suite.train_ids, suite.test_ids) == (again.train_ids, again.test_ids)
    assert len(suite.train_ids) == len(suite.test_ids) == 5
    assert suite.train_ids | suite.test_ids == {t.id for t in suite.tasks}


def test_import_works_without_bfcl_eval_and_load_says_to_run_setup():
    script = textwrap.dedent(
        """
        import sys, typing
        sys.modules["bfcl_eval"] = None  # as if not installed: imports fail, find_spec says None
        import tasks
        from tasks.bfcl import BfclSuite
        from optimizer.errors import ConfigError
        assert BfclSuite in typing.get_args(typing.get_args(tasks.SuiteConfig)[0])
        try:
            BfclSuite(category="multi_turn_base").load()
        except ConfigError as exc:
            print(exc)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=True)
    message = done.stdout.strip()
    assert "\n" not in message and "acon setup" in message and "bfcl-eval" in message


def test_ensure_installed_runs_pinned_pip_installs_only_when_needed(monkeypatch):
    commands = []
    state = {"ready": False}

    def run(command, **kwargs):
        commands.append(command)
        state["ready"] = len(commands) == 2
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(install.subprocess, "run", run)
    monkeypatch.setattr(install, "ready", lambda: state["ready"])
    install.ensure_installed(log=lambda line: None)
    assert [c[:4] for c in commands] == [[sys.executable, "-m", "pip", "install"]] * 2
    assert commands[0][-2:] == ["--no-deps", "bfcl-eval==2026.3.23"]
    assert commands[1][-1] == "mpmath==1.3.0"
    install.ensure_installed(log=lambda line: None)  # ready now: nothing runs
    assert len(commands) == 2

    def broken(command, **kwargs):
        return subprocess.CompletedProcess(command, 1, "", "ERROR: No matching distribution\n")

    state["ready"] = False
    monkeypatch.setattr(install.subprocess, "run", broken)
    with pytest.raises(AconError, match="No matching distribution"):
        install.ensure_installed(log=lambda line: None)


def test_long_context_really_has_long_outputs(suites):
    sizes = {c: [] for c in ("multi_turn_base", "multi_turn_long_context")}
    for category in sizes:
        for task in suites(category).tasks[100:140]:  # trading and travel tasks
            env, outputs, _ = replay(task)
            env.close()
            sizes[category].extend(count_tokens(o.content) for o in outputs)
    assert max(sizes["multi_turn_base"]) < 300
    assert max(sizes["multi_turn_long_context"]) > 10_000
