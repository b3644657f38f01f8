"""The README's runtime and LangChain examples, run as written on the real local model (marked `llm`).

Each example is read from the README and run in a child process with only its address changed: the local
endpoint (`optimizer.llm.local.toolcall_proxy`) runs here on a free port rather than 8080, in front of the
1.5B model's llama-server (reused if one runs, else started and stopped). The child prints the final
answer and what the run did; a test fails on garbage: no real tool call, or an answer without the fact
that only the tool result holds.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.llm

EXAMPLE_URL = "http://127.0.0.1:8080/v1"
FACT = "REF-7"  # only the refunds doc says who approves: the model cannot know it otherwise
RUNTIME_REPORT = """
import json as _json
print("ACON-RESULT " + _json.dumps({"messages": messages, "stats": runtime.stats.to_dict()}))
"""
LANGCHAIN_REPORT = """
import json as _json
_messages = [m.model_dump(include={"type", "content", "tool_calls", "name"}) for m in result["messages"]]
_stats = middleware.runtime(result).stats.to_dict()
print("ACON-RESULT " + _json.dumps({"messages": _messages, "stats": _stats}))
"""


def readme_block(marker: str) -> str:
    readme = (ROOT / "README.md").read_text()
    match = re.search(rf"<!-- {marker} -->\n```python\n(.*?)\n```", readme, re.DOTALL)
    assert match, f"README has no {marker}"
    return match.group(1)


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    from optimizer.llm.local import LocalServers
    from optimizer.llm.local.toolcall_proxy import serve

    with LocalServers(log=lambda _: None) as servers:
        servers.base_url("qwen2.5-coder-1.5b")
        httpd = serve(0)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        httpd.shutdown()
        httpd.server_close()


def run_as_written(code: str, url: str, report: str) -> tuple[str, dict]:
    assert code.count(EXAMPLE_URL) == 1, "the example names the local endpoint once"
    program = code.replace(EXAMPLE_URL, url) + "\n" + report
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, cwd=ROOT, timeout=1500)
    assert done.returncode == 0, done.stderr[-3000:]
    printed, _, result = done.stdout.rpartition("ACON-RESULT ")
    return printed.strip(), json.loads(result)


def test_the_runtime_example_on_the_local_model(endpoint):
    # With `recall` listed from the first request it passed 1 of 4 runs (2026-12-02); listed once the doc is
    # offloaded, 5 of 5 (2026-12-04: benchmarks/results/runtime_example_probe.json, this test, a fresh clone). The
    # model still varies at temperature 0 with the server's cache state: one CI run (2026-12-05) failed both of
    # two runs the same way, the model writing "Here's how you can do it:" then an empty `<tool_call>`, which
    # llama-server drops (reproduced by prefilling that text: it ends the turn with no call). A third run; garbage
    # fails all three.
    for _ in range(3):
        printed, result = run_as_written(readme_block("runtime-example"), endpoint, RUNTIME_REPORT)
        if FACT in printed:
            break
    messages = result["messages"]
    calls = [c["function"]["name"] for m in messages for c in m.get("tool_calls") or ()]
    assert "read_doc" in calls, messages  # a real tool call, read from the model's own reply
    assert messages[-1]["role"] == "assistant" and FACT in messages[-1]["content"], messages[-1]
    assert printed == messages[-1]["content"].strip()
    assert result["stats"]["requests"] >= 2 and result["stats"]["compressions"] >= 1  # the doc was offloaded
    print(json.dumps({"calls": calls, "answer": printed, "stats": result["stats"]}))


def test_the_langchain_example_on_the_local_model(endpoint):
    pytest.importorskip("langchain")
    # At temperature 0 the 1.5B model still varies with llama-server's prompt-cache state: 3 of 3 local runs
    # and 1 CI run of 2 answered with the fact; the other wrote a plan and no answer. Garbage fails both runs.
    for _ in range(2):
        printed, result = run_as_written(readme_block("langchain-example"), endpoint, LANGCHAIN_REPORT)
        if FACT in printed:
            break
    messages = result["messages"]
    calls = [c["name"] for m in messages for c in m.get("tool_calls") or ()]
    assert "read_doc" in calls, messages
    assert messages[-1]["type"] == "ai" and FACT in messages[-1]["content"], messages[-1]
    assert printed == messages[-1]["content"].strip()
    assert result["stats"]["requests"] >= 2 and result["stats"]["compressions"] >= 1
    print(json.dumps({"calls": calls, "answer": printed, "stats": result["stats"]}))


SUMMARY_REPORT = """
import json as _json
_messages = [m.model_dump(include={"type", "content", "tool_calls", "name"}) for m in result["messages"]]
print("ACON-RESULT " + _json.dumps({"messages": _messages}))
"""
SUMMARY_LEAD = "Here is a summary of the conversation to date"


def test_the_summary_export_example_on_the_local_model(endpoint, run_cli, stub, tmp_path):
    """A summary-target job's `acon export --format langchain`, loaded as the README says, in a real `create_agent`
    loop: the summarizer and the agent are the local model. The job that wrote the export starts from acon's seed
    text, as a real one does, with a scripted optimizer and summarizer (what it adds is not what this checks, but
    that the exported text runs as LangChain's own middleware and its summary keeps the rule)."""
    pytest.importorskip("langchain")
    from optimizer.context.guideline import SEED_GUIDELINE, read_guideline
    from tests.cli.test_optimize_target import _config, responder

    server = stub(responder)
    config = _config(tmp_path, server.base_url, "langchain", train_limit=6, trigger=1500)
    (tmp_path / "plain.md").write_text(read_guideline(SEED_GUIDELINE).to_markdown())
    code, _, err = run_cli("optimize", config)
    assert code == 0, err
    code, _, err = run_cli(
        "export", str(tmp_path / "job"), "--format", "langchain", "--out", str(tmp_path / "summary_middleware.json")
    )
    assert code == 0, err
    program = readme_block("summary-export-example")
    assert program.count(EXAMPLE_URL) == 1
    for _ in range(2):  # the model varies with the server's cache state even at temperature 0; garbage fails both
        done = subprocess.run(
            [sys.executable, "-c", program.replace(EXAMPLE_URL, endpoint) + "\n" + SUMMARY_REPORT],
            capture_output=True,
            text=True,
            cwd=tmp_path,  # where the export was written, as in the README
            timeout=1500,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        printed, _, report = done.stdout.rpartition("ACON-RESULT ")
        if FACT in printed:
            break
    messages = json.loads(report)["messages"]
    # The doc was summarized away: no tool result is left, a summary stands in its place, and it kept the rule.
    summaries = [m["content"] for m in messages if m["type"] == "human" and m["content"].startswith(SUMMARY_LEAD)]
    assert len(summaries) == 1 and not [m for m in messages if m["type"] == "tool"], messages
    assert FACT in summaries[0], summaries[0]
    assert messages[-1]["type"] == "ai" and FACT in messages[-1]["content"], messages[-1]
    print(json.dumps({"summary": summaries[0][:400], "answer": messages[-1]["content"]}))
