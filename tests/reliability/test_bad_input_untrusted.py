"""Bad input catalogue, continued: untrusted JSON and names that reach the file system. Recorded runs and
runtime messages nested 5,000 deep or holding a lone surrogate, a null user message, an experiment name
that climbs out of `runs/`, and ACON_HOME pointing at a file: each one line, non-zero, nothing changed."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from optimizer.errors import ConfigError
from optimizer.runtime import ContextRuntime
from tests.conftest import ROOT
from tests.runtime.test_runtime import RETENTION, conversation, policy_guideline

EXAMPLE = json.loads((ROOT / "experiments" / "data" / "example_trajectories.jsonl").read_text().splitlines()[0])
DEEP = "[" * 5_000 + "]" * 5_000


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def _runs(tmp: Path, line: str) -> Path:
    path = tmp / "runs.jsonl"
    path.write_text(line + "\n")
    return path


def _edited(edit: Any) -> str:
    run = copy.deepcopy(EXAMPLE)
    edit(run)
    return json.dumps(run)


def _set_task(text: Any) -> Any:
    return lambda run: run["messages"][1].__setitem__("content", text)


def _deep_arguments(run: dict) -> None:
    run["messages"][2]["tool_calls"][0]["function"]["arguments"] = '{"topic": ' + DEEP + "}"


CASES = {
    "deep_extra_key": (json.dumps(EXAMPLE)[:-1] + f', "extra": {DEEP}}}', "nested too deep"),
    "deep_arguments": (_edited(_deep_arguments), "nested too deep"),
    "surrogate_in_task": (json.dumps(EXAMPLE).replace("Harbor Square is", "Harbor \\ud800 is", 1), "surrogate"),
    "surrogate_in_key": (json.dumps(EXAMPLE).replace('"meta"', '"\\udfff"', 1)[:-1] + ', "\\udfff": 1}', "surrogate"),
    "null_user_message": (_edited(_set_task(None)), "'content' is null"),
}


@pytest.mark.parametrize("case", CASES)
def test_import_of_hostile_json(fails, tmp_path, case):
    line, says = CASES[case]
    source = _runs(tmp_path, line)
    fails("suites", "import", str(source), "--name", "bikes", "--out", str(tmp_path / "suites"), says=(says,))
    assert not (tmp_path / "suites").exists()


@pytest.mark.parametrize("case", ["deep_extra_key", "surrogate_in_task", "null_user_message"])
def test_replay_of_hostile_json(fails, tmp_path, case):
    line, says = CASES[case]
    source = _runs(tmp_path, line)
    config = tmp_path / "exp.toml"
    config.write_text(f'name = "x"\n[suite]\ntype = "replay"\npath = "{source}"\n')
    fails("run", str(config), "--agent", "reference", says=(f"{source}:1:", says))
    assert not (tmp_path / "runs").exists()


def _messages() -> list[dict[str, Any]]:
    return copy.deepcopy(conversation(2))


def _deep_content(messages: list[dict[str, Any]]) -> None:
    nested: Any = "x"
    for _ in range(5_000):
        nested = [nested]
    messages[-1]["content"] = [{"type": "text", "text": "a", "extra": nested}]


def _surrogate_result(messages: list[dict[str, Any]]) -> None:
    messages[-1]["content"] = "order \ud800 shipped"


def _deep_arguments_message(messages: list[dict[str, Any]]) -> None:
    messages[-2]["tool_calls"][0]["function"]["arguments"] = '{"q": ' + DEEP + "}"


@pytest.mark.parametrize(
    ("damage", "says"),
    [(_deep_content, "nested too deep"), (_surrogate_result, "lone surrogate"), (_deep_arguments_message, "too deep")],
)
def test_compact_of_hostile_messages_is_one_line_and_keeps_the_state(damage, says):
    messages = _messages()
    runtime = ContextRuntime(policy_guideline(), retention=RETENTION)
    good = runtime.compact(messages[:-2])
    damage(messages)
    with pytest.raises(ConfigError, match=says) as error:
        runtime.compact(messages)
    assert "\n" not in str(error.value)
    assert runtime.compact(_messages()[:-2]) == good  # the runtime still serves the conversation it had


def test_compact_of_a_null_task_message():
    messages = _messages()
    messages[1]["content"] = None
    with pytest.raises(ConfigError, match="message 1 \\(user\\): 'content' is null"):
        ContextRuntime(policy_guideline(), retention=RETENTION).compact(messages)


def test_recall_with_deeply_nested_arguments_is_an_error_message():
    runtime = ContextRuntime(policy_guideline(), retention=RETENTION)
    call = {"id": "r1", "type": "function", "function": {"name": "recall", "arguments": '{"handle": ' + DEEP + "}"}}
    assert runtime.answer(call) == "Error: recall arguments are not JSON."


# ---------------------------------------------------------------------------------------------- file system


@pytest.mark.parametrize("name", ["../escaped", "a/b", "..", "x\\\\y"])
def test_an_experiment_name_that_is_not_one_path_part(fails, tmp_path, name):
    config = tmp_path / "exp.toml"
    config.write_text(f'name = "{name}"\n[suite]\ntype = "smoke"\n')
    fails("run", str(config), "--agent", "reference", "--limit", "1", says=(str(config), "one path part"))
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "runs").exists()


def test_acon_home_that_is_a_file(fails, tmp_path, monkeypatch):
    (tmp_path / "home").write_text("not a directory\n")
    monkeypatch.setenv("ACON_HOME", str(tmp_path / "home"))
    fails("models", "status", says=("ACON_HOME", "not a directory"))
