"""The README's runtime example runs as written (only its server address and guideline path swapped).

The server is the project's stub: the agent model is scripted (it reads the refunds doc three times, recalls
it when the team is not in what it was sent but a handle is, then answers with the team it can see); the
compressor is scripted too, or the real local 0.5B model in the `llm` variant. The example must be a
complete agent of under 20 lines. (`tests/test_readme_examples_local.py` runs it on the real local model.)
"""

from __future__ import annotations

import json
import re

import pytest

from optimizer.testing.scripted import scripted_models
from tests.conftest import ROOT

EXAMPLE_URL = "http://127.0.0.1:8080/v1"
EXAMPLE_GUIDELINE = "guidelines/learned/bfcl_long_context.md"


def readme_example() -> str:
    readme = (ROOT / "README.md").read_text()
    match = re.search(r"<!-- runtime-example -->\n```python\n(.*?)\n```", readme, re.DOTALL)
    assert match, "README has no runtime example"
    return match.group(1)


def scripted_agent(compress):
    asked = {"n": 0}  # the agent's own count: a compacted request no longer shows every earlier read

    def respond(request: dict) -> str | dict:
        if not request.get("tools"):  # the runtime's compressor
            return compress(request)
        messages = request["messages"]
        reads = asked["n"]
        asked["n"] += 1
        if reads < 3:
            return _call(f"c{reads}", "read_doc", {"name": "refunds"})
        seen = "\n".join(str(m.get("content") or "") for m in messages)
        handle = re.search(r'recall\(handle="(h\d+)"\)', seen)
        if "REF-7" not in seen and handle and reads == 3:
            return _call("r1", "recall", {"handle": handle.group(1)})
        return {"content": "Team REF-7 approves it." if "REF-7" in seen else "I cannot tell."}

    return respond


def _call(call_id: str, name: str, arguments: dict) -> dict:
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {"content": None, "tool_calls": [{"id": call_id, "type": "function", "function": function}]}


def run_example(url: str, guideline: str) -> dict:
    code = readme_example()
    assert code.count(EXAMPLE_URL) == 1 and code.count(EXAMPLE_GUIDELINE) == 1
    namespace: dict = {}
    exec(compile(code.replace(EXAMPLE_URL, url).replace(EXAMPLE_GUIDELINE, guideline), "README", "exec"), namespace)
    return namespace


def test_the_example_is_a_short_complete_agent():
    lines = [line for line in readme_example().splitlines() if line.strip()]
    assert len(lines) < 20


def check_run(server, namespace: dict, *, recall: bool = True, sent_reads: float = 1.5, requests: int = 4) -> None:
    """`sent_reads`: at most how many reads' worth of doc text the last request may carry (three were made)."""
    runtime, messages = namespace["runtime"], namespace["messages"]
    assert messages[-1] == {"role": "assistant", "content": "Team REF-7 approves it."}
    agent_requests = [r for r in server.requests if r.get("tools")]
    assert len(agent_requests) == requests
    assert [t["function"]["name"] for t in agent_requests[-1]["tools"]] == ["read_doc", *["recall"] * recall]
    raw = namespace["docs"]["refunds"]
    sent = sum(len(str(m.get("content") or "")) for m in agent_requests[-1]["messages"])
    assert sent < sent_reads * len(raw)  # three reads of the doc were sent compressed
    assert runtime.stats.compressions > 0 and runtime.stats.requests == requests
    assert runtime.stats.recalls == (requests - 4)


def test_readme_example_with_a_policy_only_guideline(stub):
    server = stub(scripted_agent(scripted_models))
    namespace = run_example(server.base_url, EXAMPLE_GUIDELINE)
    # Every read is offloaded; the team is on the doc's first line, inside the preview, so no recall is needed
    # (the local 1.5B model answered without recalling a fact the preview hid).
    check_run(server, namespace, requests=4, sent_reads=1.0)
    assert namespace["runtime"].stats.compressor_calls == 0
    assert not [r for r in server.requests if not r.get("tools")]  # no model compressed anything


@pytest.mark.llm
def test_readme_example_with_an_llm_compressing_guideline_on_the_local_model(stub):
    from optimizer.evaluate.endpoints import ModelEndpoints
    from optimizer.llm import EndpointConfig

    with ModelEndpoints({"compressor": EndpointConfig(model="qwen2.5-coder-0.5b")}) as endpoints:
        local = endpoints.client("compressor")

        def compress(request: dict) -> str:
            return local.complete(request["messages"], max_tokens=request.get("max_tokens")).text

        server = stub(scripted_agent(compress))
        namespace = run_example(server.base_url, "guidelines/examples/summarize_early.md")
    # Its summaries name no handles (nothing to recall), and keep_last=2 leaves the last two reads raw:
    # the first read is condensed into the summary.
    check_run(server, namespace, recall=False, sent_reads=2.5)
    runtime = namespace["runtime"]
    assert runtime.stats.compressor_calls >= 1
    assert any(
        "<history_summary>" in str(m.get("content")) for r in server.requests if r.get("tools") for m in r["messages"]
    )
