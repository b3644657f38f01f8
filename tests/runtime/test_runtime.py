"""The runtime on a user's conversation: stages, recall, persistent state, stable prefixes, bad input."""

from __future__ import annotations

import copy
import itertools
import json
import pickle

import pytest

from optimizer.context.compressor import Compressor
from optimizer.context.guideline import Guideline, read_guideline
from optimizer.context.policy import RetentionPolicy
from optimizer.errors import ConfigError
from optimizer.llm.client import ChatClient
from optimizer.llm.endpoint import EndpointConfig
from optimizer.runtime import ContextRuntime, RetentionMap
from optimizer.testing.scripted import scripted_models
from optimizer.world.retention import RetentionClass
from optimizer.world.tool import ToolCall, ToolOutput

TEXTS = dict(history="Summarize the earlier steps; keep ids verbatim.", observation="Keep ids verbatim.")


def policy_guideline(**policy) -> Guideline:
    return Guideline(name="test", policy=RetentionPolicy(**policy), **TEXTS)


def doc(n: int, lines: int = 120) -> str:
    return "\n".join(f"doc {n} line {i}: the catalogue entry SKU-{n}{i:03d} costs {i}.00 EUR" for i in range(lines))


def call(call_id: str, name: str, **arguments) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def conversation(turns: int) -> list[dict]:
    """A user's agent reading `turns` long documents, then writing once."""
    messages: list[dict] = [
        {"role": "system", "content": "You are a shop assistant."},
        {"role": "user", "content": "Quote SKU-3007 and open ticket T-9."},
    ]
    for n in range(turns):
        messages.append(
            {"role": "assistant", "content": f"Reading doc {n}.", "tool_calls": [call(f"c{n}", "read_doc", n=n)]}
        )
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": doc(n)})
    messages.append({"role": "assistant", "content": None, "tool_calls": [call("w", "open_ticket", id="T-9")]})
    messages.append({"role": "tool", "tool_call_id": "w", "content": "created ticket T-9 (status open) " + doc(99, 40)})
    return messages


RETENTION = {"read_doc": "static", "open_ticket": {"side_effect": True}}


def texts(messages: list[dict]) -> str:
    return "\n".join(str(m.get("content") or "") for m in messages)


def test_write_time_offload_keeps_a_handle_and_recall_answers_it():
    runtime = ContextRuntime(
        policy_guideline(write=[{"move": "offload", "over": 300, "head_tokens": 40, "tail_tokens": 10}]),
        retention=RETENTION,
    )
    messages = conversation(2)
    sent = runtime.compact(messages)
    assert sent[0] == messages[0] and sent[1] == messages[1]
    assert sent[2]["content"] == "Reading doc 0." and sent[2]["tool_calls"][0]["id"] == "c0"
    offloaded = sent[3]["content"]
    assert sent[3]["role"] == "tool" and "recall(handle=" in offloaded and len(offloaded) < len(doc(0)) / 3
    assert "created ticket T-9 (status open)" in sent[-1]["content"] and doc(99, 40) in sent[-1]["content"]  # receipt
    tools = runtime.tools([{"type": "function", "function": {"name": "read_doc", "parameters": {}}}])
    assert [t["function"]["name"] for t in tools] == ["read_doc", "recall"]
    handle = offloaded.split('recall(handle="')[1].split('"')[0]
    recall = call("r1", "recall", handle=handle)
    assert runtime.answer(recall) == doc(0) and runtime.answer(call("c9", "read_doc", n=1)) is None
    assert runtime.answer(call("r2", "recall", handle="h999")).startswith("Error: no stored content")
    messages += [
        {"role": "assistant", "content": None, "tool_calls": [recall]},
        {"role": "tool", "tool_call_id": "r1", "content": doc(0)},
    ]
    again = runtime.compact(messages)
    assert again[-1]["content"] == doc(0)  # a recalled result is not offloaded again
    assert runtime.stats.recalls == 2 - 1  # the unknown handle restored nothing


def test_history_summary_is_made_once_and_replayed_with_a_stable_prefix(stub):
    server = stub(scripted_models)
    compressor = Compressor(
        ChatClient(
            EndpointConfig(base_url=server.base_url, model="s", backoff_s=0.0), base_url=server.base_url, model="s"
        )
    )
    guideline = policy_guideline(
        history=[{"move": "summarize", "over": 1500, "keep_last": 1, "max_tokens": 128, "index": False}]
    )
    runtime = ContextRuntime(guideline, retention=RETENTION, compressor=compressor)
    full = conversation(8)
    requests, compressed = [], []
    for end in range(3, len(full) + 1, 2):  # before every assistant reply, as an agent calls it
        calls = compressor.calls
        requests.append(runtime.compact(full[:end]))
        compressed.append(compressor.calls > calls)
    assert any("<history_summary>" in texts(r) for r in requests), "the history was never summarized"
    assert compressor.calls == runtime.stats.compressor_calls
    assert 0 < compressor.calls < len(requests)  # a summary is replayed, not remade for every request
    broke = [after[: len(before)] != before for before, after in itertools.pairwise(requests)]
    assert sum(broke) == runtime.stats.cache_breaks > 0
    # The prefix sent before changes only for a request that made a new summary.
    assert all(compressed[i + 1] for i, b in enumerate(broke) if b)


def test_state_survives_a_restart_without_compressing_again(stub, tmp_path):
    server = stub(scripted_models)
    config = EndpointConfig(base_url=server.base_url, model="s", backoff_s=0.0)

    def runtime() -> ContextRuntime:
        compressor = Compressor(ChatClient(config, base_url=server.base_url, model="s"))
        return ContextRuntime(
            read_guideline("guidelines/examples/summarize_early.md"), retention=RETENTION, compressor=compressor
        )

    full = conversation(8)
    straight = runtime()
    expected = [straight.compact(full[:end]) for end in range(3, len(full) + 1, 2)]
    first = runtime()
    half = list(range(3, len(full) + 1, 2))[:4]
    got = [first.compact(full[:end]) for end in half]
    first.save(tmp_path / "state.json")
    calls_before = len(server.requests)
    second = runtime().load(tmp_path / "state.json")
    got += [second.compact(full[:end]) for end in list(range(3, len(full) + 1, 2))[4:]]
    assert got == expected
    assert second.stats.requests == straight.stats.requests
    # After the restart only the compressions the uninterrupted runtime made after that point are made.
    assert len(server.requests) - calls_before == straight.compressor.calls - first.compressor.calls
    with pytest.raises(ConfigError, match="saved under guideline version"):
        ContextRuntime(policy_guideline()).load(tmp_path / "state.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ConfigError, match="not a runtime state file"):
        runtime().load(tmp_path / "bad.json")
    # A state file cut off mid-write (a killed process, a full disk) is refused in one line, never reset.
    saved = (tmp_path / "state.json").read_bytes()
    (tmp_path / "cut.json").write_bytes(saved[: len(saved) // 2])
    restored = runtime()
    with pytest.raises(ConfigError, match="not a runtime state file"):
        restored.load(tmp_path / "cut.json")
    assert restored.stats.requests == 0  # nothing half-loaded


def test_retention_map_classifies_by_name_arguments_and_runtime_status():
    def skills(name, arguments):
        return "skill" if name == "read_file" and str(arguments.get("path", "")).startswith("skills/") else None

    retention = RetentionMap({"read_file": "static", "pay": {"side_effect": True}}, classify=skills)
    read = ToolCall("1", "read_file", {"path": "skills/refund/SKILL.md"})
    assert retention.classify(read, ToolOutput("text")) is RetentionClass.SKILL
    assert retention.classify(ToolCall("2", "read_file", {"path": "a.txt"}), ToolOutput("x")) is RetentionClass.STATIC
    assert retention.classify(ToolCall("3", "pay", {}), ToolOutput("ok")) is RetentionClass.WRITE_RECEIPT
    assert retention.classify(ToolCall("4", "pay", {}), ToolOutput("no", is_error=True)) is RetentionClass.ERROR_PARTIAL
    assert retention.classify(ToolCall("5", "other", {}), ToolOutput("x")) is RetentionClass.UNKNOWN
    # A page that claims to be a skill is still what its registration says.
    claims = ToolOutput("SKILL.md: I am a skill")
    assert retention.classify(ToolCall("6", "read_file", {"path": "x"}), claims) is RetentionClass.STATIC


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: ContextRuntime("guidelines/seed/seed.md"), "compresses with an LLM: pass compressor="),
        (lambda: ContextRuntime(policy_guideline(), retention={"x": "secret"}), "unknown retention class 'secret'"),
        (lambda: ContextRuntime(policy_guideline(), retention={"x": {"side": 1}}), "unknown key 'side'"),
        (lambda: ContextRuntime("no/such/guideline.md"), "guideline file not found"),
        (lambda: ContextRuntime(policy_guideline(), compressor=object()), "compressor must be"),
    ],
)
def test_bad_construction_is_one_clear_error(make, message):
    with pytest.raises(ConfigError, match=message):
        make()


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        ([{"role": "assistant", "content": "hi"}], "comes before the first user message"),
        (
            [{"role": "user", "content": "t"}, {"role": "tool", "tool_call_id": "x", "content": "r"}],
            "matches no earlier",
        ),
        ([{"role": "user", "content": "t"}, {"role": "system", "content": "late"}], "after the conversation started"),
        ([{"role": "user", "content": [{"type": "image_url"}]}], "content part of type 'image_url'"),
        (
            [
                {"role": "user", "content": "t"},
                {"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{oops"}}]},
            ],
            "not valid JSON",
        ),
        ([{"role": "system", "content": "only"}], "no user message yet"),
    ],
)
def test_malformed_conversations_are_refused(messages, message):
    with pytest.raises(ConfigError, match=message):
        ContextRuntime(policy_guideline()).compact(messages)


def test_a_rewritten_conversation_is_refused_but_a_new_system_prompt_is_not():
    runtime = ContextRuntime(policy_guideline())
    messages = conversation(1)
    runtime.compact(messages)
    changed = [{"role": "system", "content": "new system prompt"}, *messages[1:]]
    assert runtime.compact(changed)[0]["content"] == "new system prompt"
    rewritten = [*messages[:3], {**messages[3], "content": "edited"}]
    with pytest.raises(ConfigError, match="message 3 differs"):
        runtime.compact(rewritten)


def test_an_earlier_message_replaced_in_the_callers_own_list_is_refused():
    runtime = ContextRuntime(policy_guideline())
    messages = conversation(2)
    runtime.compact(messages[:4])
    runtime.compact(messages)
    messages[3] = {**messages[3], "content": "edited"}  # the same list, one item swapped for another
    with pytest.raises(ConfigError, match="message 3 differs"):
        runtime.compact(messages)


def test_the_last_message_seen_edited_in_place_is_refused():
    runtime = ContextRuntime(policy_guideline())
    messages = conversation(2)
    runtime.compact(messages[:4])
    messages[3]["content"] = "edited"  # the very dict handed in before, changed
    with pytest.raises(ConfigError, match="message 3 differs"):
        runtime.compact(messages)


def test_a_caller_that_rebuilds_its_messages_at_every_call_gets_the_same_requests():
    clearing = {"history": [{"move": "clear", "trigger_tokens": 600, "keep_last": 1}]}
    rebuilding, keeping = ContextRuntime(policy_guideline(**clearing)), ContextRuntime(policy_guideline(**clearing))
    messages = conversation(4)
    for end in range(4, len(messages) + 1, 2):
        assert rebuilding.compact(copy.deepcopy(messages[:end])) == keeping.compact(messages[:end])


READ_ONLY = r"read-only \(later requests share it\): edit a copy, dict\(message\)"


def test_the_messages_compact_returns_refuse_edits_and_their_copies_are_the_callers():
    runtime = ContextRuntime(policy_guideline(), retention=RETENTION)
    messages = conversation(2)
    sent = runtime.compact(messages)
    shown = copy.deepcopy(sent)
    edits = [
        lambda m: m.__setitem__("content", "edited"),
        lambda m: m.__delitem__("content"),
        lambda m: m.update(content="edited"),
        lambda m: m.pop("content"),
        lambda m: m.popitem(),
        lambda m: m.setdefault("name", "edited"),
        lambda m: m.clear(),
        lambda m: m.__ior__({"content": "edited"}),
    ]
    for edit in edits:
        with pytest.raises(TypeError, match=READ_ONLY):
            edit(sent[3])
    message = sent[3]
    copies = [dict(message), message.copy(), copy.copy(message), copy.deepcopy(message)]
    copies.append(pickle.loads(pickle.dumps(message)))
    for mine in copies:
        assert type(mine) is dict and mine == message
        mine["content"] = "edited"  # a copy is the caller's to edit
    assert json.loads(json.dumps(sent)) == shown
    sent.append({"role": "user", "content": "the caller's own"})  # so is the list
    again = runtime.compact(messages)
    assert again == shown and all(type(m) is dict for m in shown)


def test_the_recall_name_is_reserved():
    runtime = ContextRuntime(policy_guideline(write=[{"move": "offload"}]))
    with pytest.raises(ConfigError, match="already named 'recall'"):
        runtime.tools([{"type": "function", "function": {"name": "recall"}}])


def offloaded_first_doc() -> tuple[ContextRuntime, list[dict], str]:
    """A runtime that offloaded the first document at write time, the conversation, and that document's handle."""
    runtime = ContextRuntime(
        policy_guideline(write=[{"move": "offload", "over": 300, "head_tokens": 40, "tail_tokens": 10}]),
        retention=RETENTION,
    )
    messages = conversation(2)
    sent = runtime.compact(messages)
    return runtime, messages, sent[3]["content"].split('recall(handle="')[1].split('"')[0]


def test_a_repeated_recall_points_at_the_restored_content_instead_of_paying_for_it_again():
    runtime, messages, handle = offloaded_first_doc()
    first = call("r1", "recall", handle=handle)
    assert runtime.answer(first) == doc(0)
    messages += [
        {"role": "assistant", "content": None, "tool_calls": [first]},
        {"role": "tool", "tool_call_id": "r1", "content": doc(0)},
    ]
    assert doc(0) in texts(runtime.compact(messages))  # the agent was shown the restored result
    again = runtime.answer(call("r2", "recall", handle=handle))
    assert again.startswith("Already restored") and "call_id=r1" in again and len(again) < 300
    assert runtime.store.recalled_tokens == runtime.store.get(handle).tokens  # paid for once


def test_a_recall_repeated_after_the_restored_content_was_cleared_restores_it_again():
    runtime, _, handle = offloaded_first_doc()
    assert runtime.answer(call("r1", "recall", handle=handle)) == doc(0)
    # Not yet shown in a request (or gone from it): the content itself, not a pointer.
    assert runtime.answer(call("r2", "recall", handle=handle)) == doc(0)


UNPINNED = "guidelines/examples/unpinned.md"


def test_a_guideline_that_unpins_skills_is_refused_unless_allowed(stub):
    compressor = Compressor(ChatClient(EndpointConfig(base_url="http://127.0.0.1:9/v1"), base_url="x", model="m"))
    for guideline in (UNPINNED, read_guideline(UNPINNED), policy_guideline(pinned=())):
        with pytest.raises(ConfigError, match=r"unpinned.*retention contract.*allow_unpinned") as info:
            ContextRuntime(guideline, compressor=compressor)
        assert "\n" not in str(info.value)
    with pytest.warns(UserWarning, match=r"contract override.*skill unpinned"):
        runtime = ContextRuntime(UNPINNED, compressor=compressor, allow_unpinned=True)
    assert "skill" in runtime.contract_override
    # A valid guideline is as before: nothing to override, nothing reported.
    assert ContextRuntime(policy_guideline(), allow_unpinned=True).contract_override is None


MASK_RECOVERABLY = {"history": [{"move": "mask", "keep_last": 1, "keep_first": False, "recoverable": True}]}


def tool_names(schemas: list[dict]) -> list[str]:
    return [t["function"]["name"] for t in schemas]


def test_recall_is_listed_from_the_first_request_that_shows_a_handle():
    runtime = ContextRuntime(policy_guideline(**MASK_RECOVERABLY), retention=RETENTION)
    mine = [{"type": "function", "function": {"name": "read_doc", "parameters": {"type": "object"}}}]
    messages = conversation(2)
    runtime.compact(messages[:4])  # one doc read: nothing masked yet
    assert runtime.recall_offered is False and tool_names(runtime.tools(mine)) == ["read_doc"]
    sent = runtime.compact(messages[:6])  # the second read masks the first behind a handle
    assert 'recall(handle="h1")' in texts(sent)
    assert runtime.recall_offered is True and tool_names(runtime.tools(mine)) == ["read_doc", "recall"]


def test_listing_recall_breaks_the_cache_even_when_no_message_changed():
    # A write-time offload hides only the newest result: the messages sent before stay as they were, but the
    # tools, which come first in a provider's prompt, gained `recall`.
    runtime = ContextRuntime(policy_guideline(write=[{"move": "offload", "over": 200}]), retention=RETENTION)
    small = [*conversation(0)[:2], *conversation(1)[2:4]]
    small[-1] = {**small[-1], "content": "doc 0: one line"}
    runtime.compact(small)
    assert runtime.recall_offered is False and runtime.stats.cache_breaks == 0
    grown = [*small, {"role": "assistant", "content": None, "tool_calls": [call("c1", "read_doc", n=1)]}]
    grown.append({"role": "tool", "tool_call_id": "c1", "content": doc(1)})
    sent = runtime.compact(grown)
    assert 'recall(handle="h1")' in texts(sent) and runtime.recall_offered is True
    assert runtime.stats.cache_breaks == 1


def test_a_guideline_can_list_recall_from_the_start_and_keeps_its_old_version_when_it_does_not():
    always = ContextRuntime(policy_guideline(**MASK_RECOVERABLY, recall_tool="always"), retention=RETENTION)
    always.compact(conversation(2)[:4])
    assert always.recall_offered is True and tool_names(always.tools()) == ["recall"]
    full = ContextRuntime(policy_guideline(recall_tool="always"), retention=RETENTION)
    assert full.recall_offered is False  # a guideline that never clears recoverably has nothing to recall
    # The default is left out of the policy, so guidelines written before the setting keep their content hash.
    assert "recall_tool" not in RetentionPolicy(**MASK_RECOVERABLY).model_dump()
    assert (
        policy_guideline(**MASK_RECOVERABLY).version
        != policy_guideline(**MASK_RECOVERABLY, recall_tool="always").version
    )
    with pytest.raises(ValueError, match="recall_tool"):
        RetentionPolicy(recall_tool="sometimes")


def test_a_guideline_that_never_lists_recall_cuts_without_a_handle():
    runtime = ContextRuntime(policy_guideline(**MASK_RECOVERABLY, recall_tool="never"), retention=RETENTION)
    sent = runtime.compact(conversation(3)[:8])
    masked = [m["content"] for m in sent if str(m.get("content", "")).startswith("[masked: result of read_doc")]
    assert len(masked) == 2 and all("recall" not in text and "tokens]" in text for text in masked)
    assert runtime.recall_offered is False and tool_names(runtime.tools()) == []
    assert runtime.strategy.offers_recall is False


def test_a_conversation_restored_under_never_still_cuts_without_a_handle(tmp_path):
    guideline = policy_guideline(**MASK_RECOVERABLY, recall_tool="never")
    first = ContextRuntime(guideline, retention=RETENTION)
    first.compact(conversation(3)[:6])
    later = ContextRuntime(guideline, retention=RETENTION).load(first.save(tmp_path / "state.json"))
    sent = later.compact(conversation(3)[:8])
    assert "recall" not in texts(sent) and "[masked: result of read_doc" in texts(sent)
