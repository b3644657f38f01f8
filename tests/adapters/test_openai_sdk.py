"""The openai SDK wrapper end to end: a user's tool loop over the real SDK, against the stub server."""

from __future__ import annotations

import json

import openai
import pytest

from optimizer.adapters.openai_sdk import compacting
from optimizer.errors import ConfigError
from optimizer.runtime import ContextRuntime

DOC = "Refunds over 50 EUR are approved by team REF-7.\n" + "Boilerplate line.\n" * 300
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_doc",
            "description": "Read a document.",
            "parameters": {"type": "object", "properties": {}},
        },
    }
]


def agent(request: dict) -> dict:
    """Reads the doc, recalls the offloaded original by the handle it was shown, then answers."""
    messages = request["messages"]
    tool_messages = [m for m in messages if m["role"] == "tool"]
    if not tool_messages:
        return {
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read_doc", "arguments": "{}"}}],
        }
    if len(tool_messages) == 1:
        handle = tool_messages[0]["content"].split('recall(handle="')[1].split('"')[0]
        return {
            "content": None,
            "tool_calls": [
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "recall", "arguments": json.dumps({"handle": handle})},
                }
            ],
        }
    return {"content": f"Saw {len(tool_messages[-1]['content'])} characters after recall."}


def test_wrapped_client_sends_compacted_messages_and_the_recall_tool(stub):
    server = stub(agent)
    runtime = ContextRuntime("guidelines/learned/bfcl_long_context.md", retention={"read_doc": "static"})
    client = compacting(openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0), runtime)
    messages: list = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Who approves refunds?"}]
    while True:
        reply = client.chat.completions.create(model="m", messages=messages, tools=TOOLS).choices[0].message
        messages.append(reply)  # the SDK's own message object, as users append it
        if not reply.tool_calls:
            break
        for call in reply.tool_calls:
            content = runtime.answer(call) or DOC
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
    assert reply.content == f"Saw {len(DOC)} characters after recall."
    first, second, third = server.requests
    # `recall` is listed from the first request that shows a handle (the doc offloaded at write time), not before.
    assert [t["function"]["name"] for t in first["tools"]] == ["read_doc"]
    assert [t["function"]["name"] for t in second["tools"]] == ["read_doc", "recall"]
    offloaded = second["messages"][-1]["content"]
    assert "recall(handle=" in offloaded and len(offloaded) < len(DOC) / 4  # the doc went behind a handle
    assert third["messages"][-1]["content"] == DOC  # the recall was answered from the runtime's store
    assert third["messages"][: len(second["messages"])] == second["messages"]  # the prefix stayed stable
    assert client.models is client._client.models  # everything else is the SDK client's own
    # One break: the second request lists `recall`, and a provider's cached prefix starts with the tools.
    assert runtime.stats.recalls == 1 and runtime.stats.cache_breaks == 1


def test_responses_create_is_refused_in_one_line_not_passed_through_uncompacted():
    client = compacting(
        openai.OpenAI(api_key="x", base_url="http://127.0.0.1:9/v1"),
        ContextRuntime("guidelines/learned/bfcl_long_context.md"),
    )
    with pytest.raises(ConfigError, match=r"responses.create would send the conversation uncompacted") as caught:
        client.responses.create(model="m", input="hi")
    assert "\n" not in str(caught.value)
    # What sends no conversation is the SDK's own.
    assert client.responses.retrieve.__self__ is client._client.responses
