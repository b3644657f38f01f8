"""`acon suites import --experiment`: runs traced by the real `mlflow.openai.autolog()` of an `openai` client
against the stub server become the same replay tasks as the JSONL import of the same runs."""

from __future__ import annotations

import dataclasses
import json
import re

import openai
import pytest

from tasks.replay import ReplaySuite, import_mlflow_traces, import_trajectories

EXPERIMENT = "shop-agent"
RETENTION = {"lookup": {"retention_class": "static"}, "reserve": {"side_effect": True}}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} a catalogue item.",
            "parameters": {"type": "object", "properties": {arg: {"type": "string"}}},
        },
    }
    for name, arg in (("lookup", "sku"), ("reserve", "item_id"))
]


def shop_agent(request: dict) -> dict:
    """Looks the SKU up, reserves the item id the lookup printed, then answers with the receipt."""
    messages = request["messages"]
    results = [m["content"] for m in messages if m["role"] == "tool"]
    sku = re.search(r"SKU-\d+", messages[1]["content"]).group(0)
    if not results:
        return call(f"l-{sku}", "lookup", {"sku": sku})
    if len(results) == 1:
        return call(f"r-{sku}", "reserve", {"item_id": re.search(r"item_id: (IT-\d+)", results[0]).group(1)})
    return {"content": f"Reserved: {results[-1]}"}


def call(call_id: str, name: str, arguments: dict) -> dict:
    return {
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        ],
    }


def tool_result(name: str, arguments: dict) -> str:
    if name == "lookup":
        n = arguments["sku"].split("-")[1]
        return "\n".join(
            [
                f"catalogue entry for {arguments['sku']}",
                f"item_id: IT-{n}7",
                "price: 12.50 EUR",
                *[f"note {i}: unrelated text" for i in range(20)],
            ]
        )
    return f"reservation RS-{arguments['item_id'][3:]} created (status: held)"


def run_agent(client: openai.OpenAI, sku: str) -> list:
    messages: list = [
        {"role": "system", "content": "You reserve catalogue items."},
        {"role": "user", "content": f"Reserve one {sku}."},
    ]
    while True:
        reply = client.chat.completions.create(model="m", messages=messages, tools=TOOLS).choices[0].message
        messages.append(reply.model_dump(exclude_none=True))
        if not reply.tool_calls:
            return messages
        for c in reply.tool_calls:
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": c.id,
                    "content": tool_result(c.function.name, json.loads(c.function.arguments)),
                }
            )


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """Four agent runs autologged to a sqlite store: two as one trace per call, two under @mlflow.trace."""
    import mlflow

    from optimizer.testing.stub_server import StubServer
    from optimizer.tracking.mlflow_tracker import ensure_experiment
    from optimizer.tracking.store import sqlite_uri

    tmp = tmp_path_factory.mktemp("traces")
    uri = sqlite_uri(tmp / "mlflow.db")
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    # Artifacts beside the store, not in ./mlartifacts of whatever directory the tests run from.
    ensure_experiment(mlflow.MlflowClient(uri), EXPERIMENT, (tmp / "mlartifacts").as_uri())
    mlflow.set_experiment(EXPERIMENT)
    mlflow.openai.autolog(silent=True)
    runs = []
    try:
        with StubServer(shop_agent) as url:
            client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0)
            for sku in ("SKU-101", "SKU-202"):
                messages = run_agent(client, sku)
                mlflow.flush_trace_async_logging()
                runs.append((mlflow.get_last_active_trace_id(), messages))  # the final call's own trace
            grouped = mlflow.trace(run_agent, name="agent_run")
            for sku in ("SKU-303", "SKU-404"):
                messages = grouped(client, sku)
                mlflow.flush_trace_async_logging()
                runs.append((mlflow.get_last_active_trace_id(), messages))
    finally:
        mlflow.openai.autolog(disable=True)
        mlflow.set_tracking_uri(previous)
    jsonl = tmp / "runs.jsonl"
    jsonl.write_text(
        "".join(
            json.dumps({"id": trace_id, "messages": messages, "tools": TOOLS, "retention": RETENTION}) + "\n"
            for trace_id, messages in runs
        )
    )
    return uri, jsonl, tmp


def comparable(task) -> dict:
    data = {f.name: getattr(task, f.name) for f in dataclasses.fields(task) if f.name not in ("meta", "make_env")}
    meta = {k: v for k, v in task.meta.items() if k not in ("source", "line", "mlflow_trace")}
    env = task.make_env()
    try:
        tools = [(t.name, t.retention_class, t.side_effect, dict(t.parameters)) for t in env.tools(0)]
    finally:
        env.close()
    return {**data, "meta": meta, "tools": tools}


def test_traces_yield_the_same_tasks_as_the_jsonl_of_the_same_runs(traced):
    uri, jsonl, tmp = traced
    _, from_jsonl = import_trajectories(jsonl, "shop_jsonl", out=tmp / "a")
    _, from_mlflow = import_mlflow_traces(uri, EXPERIMENT, "shop_mlflow", retention=RETENTION, out=tmp / "b")
    assert len(from_mlflow.tasks) == 4
    assert sorted(t.id for t in from_mlflow.tasks) == sorted(t.id for t in from_jsonl.tasks)
    assert (from_mlflow.train_ids, from_mlflow.test_ids) == (from_jsonl.train_ids, from_jsonl.test_ids)
    jsonl_tasks = {t.id: comparable(t) for t in from_jsonl.tasks}
    for task in from_mlflow.tasks:
        mine = comparable(task)
        assert {**mine, "suite": None} == {**jsonl_tasks[task.id], "suite": None}
        assert task.meta["mlflow_trace"] == task.id
    reserve = next(s for s in from_mlflow.tasks[0].reference if s.call is not None and s.call.name == "reserve")
    assert [n.literal for n in reserve.needs] == [reserve.call.arguments["item_id"]]  # copied from the lookup
    replayed = ReplaySuite(path=str(tmp / "b" / "shop_mlflow.parquet")).load()
    assert {t.id for t in replayed.tasks} == {t.id for t in from_mlflow.tasks}


def test_cli_imports_an_experiment_and_refuses_bad_sources_in_one_line(traced, run_cli, tmp_path):
    uri, _, _ = traced
    retention = tmp_path / "retention.json"
    retention.write_text(json.dumps(RETENTION))
    code, out, err = run_cli(
        "suites",
        "import",
        "--experiment",
        EXPERIMENT,
        "--tracking-uri",
        uri,
        "--retention",
        str(retention),
        "--name",
        "shop",
        "--out",
        str(tmp_path),
    )
    assert code == 0, err
    assert f"imported 4 runs from MLflow experiment '{EXPERIMENT}'" in out
    for args, says in [
        (["--experiment", "nope", "--tracking-uri", uri], "no experiment named 'nope'"),
        (["--experiment", EXPERIMENT], "--experiment needs --tracking-uri"),
        (["--experiment", EXPERIMENT, "--tracking-uri", uri, "--filter", "tag.x = 'y'"], "no traced chat run"),
        (
            ["--experiment", EXPERIMENT, "--tracking-uri", uri, "--retention", str(tmp_path / "no.json")],
            "file not found",
        ),
    ]:
        code, _, err = run_cli("suites", "import", *args, "--name", "other", "--out", str(tmp_path / "x"))
        assert code == 2 and says in err, (args, err)
        assert len(err.strip().splitlines()) == 1
