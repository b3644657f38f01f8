"""The local endpoint: routes by model, turns JSON actions into `tool_calls` for any client, relays the rest."""

from __future__ import annotations

import json
import threading

import openai
import pytest

from optimizer.llm.local import toolcall_proxy

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_doc",
            "description": "Read a doc.",
            "parameters": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        },
    }
]
ACTION = '```json\n{"name": "read_doc", "arguments": {"name": "refunds"}}\n```'
ASK = [{"role": "user", "content": "Who approves refunds? Read the refunds doc."}]


@pytest.fixture
def endpoint(stub, monkeypatch):
    """The endpoint on a free port, with model `m` served by a scripted server that writes `ACTION`."""
    model = stub(lambda request: ACTION)
    monkeypatch.setattr(toolcall_proxy, "upstream_url", lambda name: model.base_url if name == "m" else None)
    httpd = toolcall_proxy.serve(0)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield model, openai.OpenAI(base_url=f"http://127.0.0.1:{httpd.server_address[1]}/v1", api_key="x", max_retries=0)
    httpd.shutdown()
    httpd.server_close()


def test_a_json_action_comes_back_as_a_tool_call(endpoint):
    model, client = endpoint
    choice = client.chat.completions.create(model="m", messages=ASK, tools=TOOLS).choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    (call,) = choice.message.tool_calls
    assert call.function.name == "read_doc" and json.loads(call.function.arguments) == {"name": "refunds"}
    assert model.requests[-1]["tools"] == TOOLS  # the model saw the tools through its own chat template


def test_without_tools_the_reply_is_relayed_untouched(endpoint):
    _, client = endpoint
    message = client.chat.completions.create(model="m", messages=ASK).choices[0].message
    assert message.content == ACTION and message.tool_calls is None


def test_tool_choice_none_keeps_the_text(endpoint):
    _, client = endpoint
    message = client.chat.completions.create(model="m", messages=ASK, tools=TOOLS, tool_choice="none")
    assert message.choices[0].message.content == ACTION


def test_a_streamed_request_gets_the_call_as_deltas(endpoint):
    model, client = endpoint
    stream = client.chat.completions.create(
        model="m", messages=ASK, tools=TOOLS, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    calls = [c for chunk in chunks for choice in chunk.choices for c in choice.delta.tool_calls or ()]
    assert [(c.function.name, c.function.arguments) for c in calls] == [("read_doc", '{"name": "refunds"}')]
    assert [choice.finish_reason for chunk in chunks for choice in chunk.choices][-1] == "tool_calls"
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens > 0
    assert "stream" not in model.requests[-1]  # asked whole: an action is read once its text is complete


def test_langchain_chat_openai_gets_tool_calls_too(endpoint):
    pytest.importorskip("langchain_openai")
    from langchain_openai import ChatOpenAI

    _, client = endpoint
    chat = ChatOpenAI(base_url=str(client.base_url), api_key="x", model="m", max_retries=0)
    reply = chat.bind_tools(TOOLS).invoke("Who approves refunds? Read the refunds doc.")
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [("read_doc", {"name": "refunds"})]


def test_a_model_not_running_is_a_one_line_404(endpoint):
    _, client = endpoint
    with pytest.raises(openai.NotFoundError, match="model 'other' is not running here; start it with"):
        client.chat.completions.create(model="other", messages=ASK)


def test_a_model_server_gone_is_a_502_naming_it(endpoint, monkeypatch):
    _, client = endpoint
    monkeypatch.setattr(toolcall_proxy, "upstream_url", lambda name: "http://127.0.0.1:9/v1")
    with pytest.raises(openai.APIStatusError, match="did not answer") as caught:
        client.chat.completions.create(model="m", messages=ASK, tools=TOOLS)
    assert caught.value.status_code == 502


def test_the_endpoint_process_starts_once_on_its_port_and_stops(tmp_path, monkeypatch):
    import socket
    import urllib.request

    from optimizer.errors import AconError
    from optimizer.llm.local.endpoint import endpoint_status, start_endpoint, stop_endpoint

    monkeypatch.setenv("ACON_HOME", str(tmp_path))  # no model runs under this home
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    state = start_endpoint(port, log=lambda _: None)
    try:
        assert start_endpoint(port, log=lambda _: None) == state  # reused, not started twice
        with pytest.raises(AconError, match=f"already runs on port {port}"):
            start_endpoint(port + 1, log=lambda _: None)
        with urllib.request.urlopen(f"{state.base_url}/models", timeout=5) as response:
            assert json.loads(response.read()) == {"object": "list", "data": []}
    finally:
        assert stop_endpoint()
    assert endpoint_status() is None and not stop_endpoint()
