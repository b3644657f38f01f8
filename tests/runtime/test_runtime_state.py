"""The runtime's state and its API under bad input: one-line errors, and a refused load changes nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from optimizer.errors import ConfigError
from optimizer.runtime import ContextRuntime
from optimizer.runtime.state import dump_state
from tests.runtime.test_runtime import RETENTION, call, conversation, policy_guideline

FULL = conversation(6)
THREE, ONE = FULL[:8], FULL[:4]  # the task and three documents read; the task and one
OFFLOAD = {"write": [{"move": "offload", "over": 300, "head_tokens": 40, "tail_tokens": 10}]}


def runtime() -> ContextRuntime:
    return ContextRuntime(policy_guideline(**OFFLOAD), retention=RETENTION)


@pytest.fixture
def saved(tmp_path) -> dict[str, Any]:
    first = runtime()
    first.compact(THREE)
    first.save(tmp_path / "state.json")
    return json.loads((tmp_path / "state.json").read_text())


def _entry_with_must_keep(data: dict) -> None:
    entry = next(e for e in data["entries"] if e["kind"] == "result")
    entry["must_keep"] = ["a must-keep line that is not in the content"]


def _del(key: str) -> Callable[[dict], None]:
    return lambda data: data.pop(key)


BROKEN: list[tuple[str, Callable[[dict], None], str]] = [
    ("no strategy_version", _del("strategy_version"), "missing field 'strategy_version'"),
    ("no step", _del("step"), "missing field 'step'"),
    ("no seen", _del("seen"), "missing field 'seen'"),
    ("no entry content", lambda d: d["entries"][1].pop("content"), "entries[1]"),
    ("step is text", lambda d: d.update(step="3"), "'step' must be"),
    ("entries not a list", lambda d: d.update(entries={"0": {}}), "'entries' must be"),
    ("content not text", lambda d: d["entries"][1].update(content=5), "entries[1]"),
    ("stats of another shape", lambda d: d.update(stats=[1, 2]), "'stats' must be"),
    ("reversed entries", lambda d: d["entries"].reverse(), "entries[0] has id"),
    ("edit of a missing entry", lambda d: d["edits"].append({"type": "drop", "entry_ids": [999]}), "entry 999"),
    ("handle of a missing entry", lambda d: d["store"]["by_entry"].update({"999": "h1"}), "entry 999"),
    ("must-keep line not in the content", _entry_with_must_keep, "must_keep line"),
    ("seen texts keyed by words", lambda d: d["seen"]["texts"].update(x="y"), "'seen.texts'"),
]


@pytest.mark.parametrize(("case", "damage", "says"), BROKEN, ids=[b[0] for b in BROKEN])
def test_a_damaged_state_is_refused_in_one_line_and_changes_nothing(tmp_path, saved, case, damage, says):
    damage(saved)
    (tmp_path / "damaged.json").write_text(json.dumps(saved))
    # A runtime in the middle of another conversation: a refused load must leave it exactly as it was.
    busy = runtime()
    busy.compact(ONE)
    before = json.dumps(dump_state(busy), sort_keys=True)
    with pytest.raises(ConfigError) as info:
        busy.load(tmp_path / "damaged.json")
    assert says in str(info.value) and str(tmp_path / "damaged.json") in str(info.value)
    assert "\n" not in str(info.value)
    assert json.dumps(dump_state(busy), sort_keys=True) == before
    assert busy.compact(ONE) == runtime().compact(ONE)


def test_the_undamaged_state_loads(tmp_path, saved):
    (tmp_path / "ok.json").write_text(json.dumps(saved))
    loaded = runtime().load(tmp_path / "ok.json")
    straight = runtime()
    straight.compact(THREE)
    assert loaded.compact(FULL[:10]) == straight.compact(FULL[:10])


# `data/runtime_state_v1.json` was saved by the runtime before its state moved behind methods of the objects
# that own it (history, recall store, seen messages): a user's saved conversation must outlive such changes.
SAVED_BEFORE = Path(__file__).parent / "data" / "runtime_state_v1.json"
CLEARS = {
    "write": [{"move": "offload", "over": 300, "head_tokens": 40, "tail_tokens": 10}],
    "history": [{"move": "clear", "trigger_tokens": 600, "keep_last": 1}],
}


def _recalled(messages: list[dict], runtime: ContextRuntime) -> list[dict]:
    """The conversation the saved state ends with: four documents read, three cleared, the first recalled."""
    runtime.compact(messages[:6])
    runtime.compact(messages[:8])
    asked = {"role": "assistant", "content": "Restoring doc 0.", "tool_calls": [call("r1", "recall", handle="h1")]}
    answer = runtime.answer(asked["tool_calls"][0])
    return [*messages[:8], asked, {"role": "tool", "tool_call_id": "r1", "content": answer}]


def test_a_state_saved_before_loads_continues_and_saves_back_unchanged(tmp_path):
    loaded = ContextRuntime(policy_guideline(**CLEARS), retention=RETENTION).load(SAVED_BEFORE)
    assert loaded.history.edits and loaded.store.get("h1") is not None  # edits and a stored original came back
    loaded.save(tmp_path / "again.json")
    assert (tmp_path / "again.json").read_text() == SAVED_BEFORE.read_text()
    full = conversation(4)
    straight = ContextRuntime(policy_guideline(**CLEARS), retention=RETENTION)
    messages = _recalled(full, straight)
    straight.compact(messages)
    straight.save(tmp_path / "straight.json")  # the runtime today writes the same state
    assert (tmp_path / "straight.json").read_text() == SAVED_BEFORE.read_text()
    later = [*messages, *full[8:]]
    assert loaded.compact(later) == straight.compact(later)
    assert loaded.stats == straight.stats


def test_load_of_a_directory_and_save_to_an_unwritable_path_are_one_line(tmp_path):
    with pytest.raises(ConfigError, match="not a runtime state file") as info:
        runtime().load(tmp_path)
    assert "\n" not in str(info.value)
    (tmp_path / "a-file").write_text("x")
    busy = runtime()
    busy.compact(ONE)
    with pytest.raises(ConfigError, match="cannot write") as info:
        busy.save(tmp_path / "a-file" / "state.json")
    assert str(tmp_path / "a-file" / "state.json") in str(info.value) and "\n" not in str(info.value)


def test_answer_takes_a_tool_call_in_either_form_and_refuses_anything_else():
    busy = runtime()
    sent = busy.compact(ONE)
    handle = sent[3]["content"].split('recall(handle="')[1].split('"')[0]
    as_text = busy.answer(call("r1", "recall", handle=handle))
    # Inline-dict arguments, as `compact` takes them.
    inline = {"id": "r2", "type": "function", "function": {"name": "recall", "arguments": {"handle": handle}}}
    assert busy.answer(inline) == as_text and as_text.startswith("doc 0 line 0")
    for bad in (None, "recall", {"id": "x"}, {"function": "recall"}):
        with pytest.raises(ConfigError, match="answer\\(\\)") as info:
            busy.answer(bad)
        assert "\n" not in str(info.value)


def _race(shared: ContextRuntime, conversations: list[list[dict]]) -> list[Any]:
    """Each conversation compacted on its own thread, all released at once: the results or the errors."""
    import threading

    barrier = threading.Barrier(len(conversations))
    results: list[Any] = []

    def work(messages: list[dict]) -> None:
        barrier.wait()
        try:
            results.append(shared.compact(messages))
        except Exception as exc:  # the failure under test: recorded, then asserted on by the caller
            results.append(exc)

    threads = [threading.Thread(target=work, args=(m,)) for m in conversations]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_concurrent_calls_on_one_runtime_are_serialized():
    # Two threads of one agent compacting the same conversation (an SDK wrapper shared by threads, parallel
    # tool calls answering recalls): each call sees the conversation as the one before it left it.
    expected = runtime().compact(FULL)
    for _ in range(10):
        shared = runtime()
        results = _race(shared, [FULL, FULL, FULL[:10]])
        # The shorter conversation may come last and be refused as a rewrite; never anything else.
        for result in results:
            assert not isinstance(result, Exception) or "differs from what this runtime already saw" in str(result)
        assert shared.compact(FULL) == expected
        assert [e.id for e in shared.history.entries] == list(range(len(shared.history.entries)))
