"""The LangChain middleware end to end: a real `create_agent` loop against the stub server."""

from __future__ import annotations

import json

from langchain.agents import create_agent
from langchain_core.tools import StructuredTool, ToolException, tool
from langchain_openai import ChatOpenAI

from optimizer.adapters.langchain_middleware import AconMiddleware
from optimizer.runtime import ContextRuntime

DOC = "Refunds over 50 EUR are approved by team REF-7.\n" + "Boilerplate line.\n" * 300


@tool
def read_doc(name: str) -> str:
    """Read a policy document by name."""
    return DOC


def _pay(order: str) -> str:
    raise ToolException(f"payment service down for {order}")


# With handle_tool_error LangChain answers a raising tool with a ToolMessage of status="error".
pay = StructuredTool.from_function(_pay, name="pay", description="Pay out a refund.", handle_tool_error=True)


def agent(request: dict) -> dict:
    """Reads the doc, tries to pay (it fails), recalls the offloaded doc, then answers."""
    messages = request["messages"]
    tools = [m for m in messages if m["role"] == "tool"]
    if len(tools) == 0:
        return call("c1", "read_doc", {"name": "refunds"})
    if len(tools) == 1:
        return call("c2", "pay", {"order": "A-1"})
    if len(tools) == 2:
        handle = tools[0]["content"].split('recall(handle="')[1].split('"')[0]
        return call("c3", "recall", {"handle": handle})
    return {"content": f"Recalled {len(tools[-1]['content'])} characters."}


def call(call_id: str, name: str, arguments: dict) -> dict:
    return {
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        ],
    }


def test_create_agent_with_the_middleware_sends_compacted_requests(stub):
    server = stub(agent)
    runtime = ContextRuntime(
        "guidelines/learned/bfcl_long_context.md", retention={"read_doc": "static", "pay": {"side_effect": True}}
    )
    model = ChatOpenAI(base_url=server.base_url, api_key="unused", model="m", max_retries=0)
    graph = create_agent(model, [read_doc, pay], system_prompt="Be brief.", middleware=[AconMiddleware(runtime)])
    result = graph.invoke({"messages": [{"role": "user", "content": "Who approves refunds?"}]})
    assert result["messages"][-1].content == f"Recalled {len(DOC)} characters."
    assert len(server.requests) == 4
    first = server.requests[0]
    assert {t["function"]["name"] for t in first["tools"]} == {"read_doc", "pay", "recall"}
    assert first["messages"][0] == {"role": "system", "content": "Be brief."}
    offloaded = server.requests[1]["messages"][-1]["content"]
    assert "recall(handle=" in offloaded and len(offloaded) < len(DOC) / 4
    assert server.requests[3]["messages"][-1]["content"] == DOC  # answered from the runtime's store
    assert len(result["messages"][2].content) == len(DOC)  # the agent's own state keeps the full result
    failed = next(e for e in runtime.history.entries if e.call is not None and e.call.name == "pay")
    assert failed.is_error and failed.retention.value == "error_partial"  # status, not a receipt
    assert runtime.stats.requests == 4 and runtime.stats.recalls == 1
