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
    middleware = AconMiddleware(runtime)
    graph = create_agent(model, [read_doc, pay], system_prompt="Be brief.", middleware=[middleware])
    result = graph.invoke({"messages": [{"role": "user", "content": "Who approves refunds?"}]})
    runtime = middleware.runtime(result)  # the conversation's own, rebuilt from the agent state
    assert result["messages"][-1].content == f"Recalled {len(DOC)} characters."
    assert len(server.requests) == 4
    first = server.requests[0]
    # `recall` is shown from the request after the doc was offloaded behind a handle, not before.
    assert {t["function"]["name"] for t in first["tools"]} == {"read_doc", "pay"}
    assert {t["function"]["name"] for t in server.requests[1]["tools"]} == {"read_doc", "pay", "recall"}
    assert first["messages"][0] == {"role": "system", "content": "Be brief."}
    offloaded = server.requests[1]["messages"][-1]["content"]
    assert "recall(handle=" in offloaded and len(offloaded) < len(DOC) / 4
    assert server.requests[3]["messages"][-1]["content"] == DOC  # answered from the runtime's store
    assert len(result["messages"][2].content) == len(DOC)  # the agent's own state keeps the full result
    failed = next(e for e in runtime.history.entries if e.call is not None and e.call.name == "pay")
    assert failed.is_error and failed.retention.value == "error_partial"  # status, not a receipt
    assert runtime.stats.requests == 4 and runtime.stats.recalls == 1


def reader(request: dict) -> dict:
    """Per user turn: reads the doc once, then answers; a turn that asks to look again recalls the handle."""
    messages = request["messages"]
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    turn = messages[last_user + 1 :]
    asked = messages[last_user]["content"]
    if not turn:
        if asked.startswith("Look again"):
            shown = next(m["content"] for m in messages if m["role"] == "tool" and "recall(handle=" in m["content"])
            return call(f"r{len(messages)}", "recall", {"handle": shown.split('recall(handle="')[1].split('"')[0]})
        return call(f"d{len(messages)}", "read_doc", {"name": "refunds"})
    return {"content": f"{asked[:12]}: read {len(turn[-1]['content'])} characters."}


def ask(graph, thread: str, text: str) -> dict:
    return graph.invoke({"messages": [{"role": "user", "content": text}]}, {"configurable": {"thread_id": thread}})


def test_one_agent_serves_two_threads_in_turn(stub):
    from langgraph.checkpoint.memory import InMemorySaver

    server = stub(reader)
    model = ChatOpenAI(base_url=server.base_url, api_key="unused", model="m", max_retries=0)
    middleware = AconMiddleware("guidelines/learned/bfcl_long_context.md", retention={"read_doc": "static"})
    graph = create_agent(model, [read_doc], middleware=[middleware], checkpointer=InMemorySaver())
    first_a = ask(graph, "a", "Who approves refunds?")
    first_b = ask(graph, "b", "Who signs refunds?")
    second_a = ask(graph, "a", "Look again, please.")
    second_b = ask(graph, "b", "Look again, then.")
    assert second_a["messages"][-1].content == f"Look again, : read {len(DOC)} characters."
    assert second_b["messages"][-1].content == f"Look again, : read {len(DOC)} characters."
    for first, second in ((first_a, second_a), (first_b, second_b)):
        before, after = middleware.runtime(first).stats, middleware.runtime(second).stats
        assert (before.requests, before.recalls) == (2, 0) and (after.requests, after.recalls) == (4, 1)
    # Each thread's requests carry its own conversation only.
    b_turn_two = [r for r in server.requests if any(m.get("content") == "Look again, then." for m in r["messages"])]
    assert b_turn_two and all("Who approves" not in json.dumps(r["messages"]) for r in b_turn_two)


def test_a_fresh_runtime_is_required_as_settings():
    from optimizer.errors import ConfigError

    runtime = ContextRuntime("guidelines/learned/bfcl_long_context.md")
    runtime.compact([{"role": "user", "content": "hi"}])
    try:
        AconMiddleware(runtime)
    except ConfigError as exc:
        assert "already holds a conversation (1 requests)" in str(exc)
    else:
        raise AssertionError("a runtime with a conversation was taken as settings")


RESTART = """
import functools, itertools, json, sys
from pathlib import Path
from langchain.agents import create_agent
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver, PersistentDict
from optimizer.adapters.langchain_middleware import AconMiddleware
from tests.adapters.test_langchain_middleware import read_doc

url, store, text = sys.argv[1:]
names = iter(("storage", "writes", "blobs"))

def on_disk(*default):
    saved = PersistentDict(*default, filename=str(Path(store) / next(names)))
    if Path(saved.filename).exists():
        saved.load()
    return saved

model = ChatOpenAI(base_url=url, api_key="unused", model="m", max_retries=0)
middleware = AconMiddleware("guidelines/learned/bfcl_long_context.md", retention={"read_doc": "static"})
with InMemorySaver(factory=on_disk) as saver:
    graph = create_agent(model, [read_doc], middleware=[middleware], checkpointer=saver)
    result = graph.invoke({"messages": [{"role": "user", "content": text}]}, {"configurable": {"thread_id": "t"}})
    stats = middleware.runtime(result).stats
    print(json.dumps({"answer": result["messages"][-1].content, "requests": stats.requests, "recalls": stats.recalls}))
"""


def test_a_thread_survives_a_process_restart_with_a_persisting_checkpointer(stub, tmp_path):
    import subprocess
    import sys

    from tests.conftest import ROOT

    server = stub(reader)

    def turn(text: str) -> dict:
        command = [sys.executable, "-c", RESTART, server.base_url, str(tmp_path), text]
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    first = turn("Who approves refunds?")
    assert (first["requests"], first["recalls"]) == (2, 0)
    assert first["answer"].startswith("Who approves: read ") and str(len(DOC)) not in first["answer"]  # offloaded
    # A new process: the thread's runtime comes back from the checkpoint, its recall store included.
    assert turn("Look again, please.") == {
        "answer": f"Look again, : read {len(DOC)} characters.",
        "requests": 4,
        "recalls": 1,
    }


def test_the_readme_langchain_example_runs_against_a_scripted_model(stub, capsys):
    """The README block as written, its address swapped for a stub that reads (recalling only what a preview
    hides), then answers."""
    from tests.test_readme_examples_local import EXAMPLE_URL, readme_block

    def scripted(request: dict) -> dict:
        messages = request["messages"]
        seen = "\n".join(str(m.get("content") or "") for m in messages)
        tool_results = [m for m in messages if m["role"] == "tool"]
        if not tool_results:
            return call("c1", "read_doc", {"name": "refunds"})
        if "REF-7" not in seen and len(tool_results) == 1:
            return call("c2", "recall", {"handle": seen.split('recall(handle="')[1].split('"')[0]})
        return {"content": "Team REF-7 approves it." if "REF-7" in seen else "I cannot tell."}

    server = stub(scripted)
    code = readme_block("langchain-example")
    assert code.count(EXAMPLE_URL) == 1
    namespace: dict = {}
    exec(compile(code.replace(EXAMPLE_URL, server.base_url), "README", "exec"), namespace)
    assert capsys.readouterr().out.strip() == "Team REF-7 approves it."
    stats = namespace["middleware"].runtime(namespace["result"]).stats
    assert (stats.requests, stats.recalls) == (2, 0) and stats.compressions >= 1  # offloaded, no recall needed
    sent = json.dumps(server.requests[1]["messages"])
    assert "REF-7" in sent and sent.count("card payments settle") < 40  # the preview: the fact, not the doc
