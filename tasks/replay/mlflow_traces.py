"""Recorded runs from MLflow traces (e.g. `mlflow.openai.autolog()`) turned into replay tasks.

Each chat-model span of an autologged OpenAI call holds the request (`messages`, `tools`) as its inputs
and the `ChatCompletion` as its outputs, so request + reply is the conversation up to that reply. An
agent makes one call per step: each call's conversation extends the previous one's, in one trace (the
agent wrapped in `@mlflow.trace`) or in a trace per call. A run is a conversation no other call extends
that ends in an answer (an assistant reply without tool calls). Runs become records of the JSONL format
(`tasks.replay.trajectories`) and go through the same parser, with the same retention map, so the
MLflow import of some runs yields the same tasks as the JSONL import of the same runs. Errors name the
trace: `EXPERIMENT:TRACE_ID: message 3 (tool): ...`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from optimizer.errors import ConfigError

CHAT_SPAN_TYPES = frozenset({"CHAT_MODEL", "LLM"})


@dataclass(frozen=True)
class TracedRun:
    trace_id: str
    record: dict[str, Any]  # one line of the JSONL format


def traced_runs(
    tracking_uri: str,
    experiment: str,
    *,
    filter_string: str | None = None,
    retention: Mapping[str, Any] | None = None,
    max_traces: int = 10_000,
) -> list[TracedRun]:
    """Every finished run in `experiment`'s traces (oldest first), as JSONL records with `retention`."""
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    client = MlflowClient(tracking_uri=tracking_uri)
    try:
        found = client.get_experiment_by_name(experiment)
        traces = _all_traces(client, found.experiment_id, filter_string, max_traces) if found else None
    except MlflowException as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(f"{tracking_uri}: {first}") from None
    if traces is None:
        raise ConfigError(f"{tracking_uri}: no experiment named {experiment!r}")
    calls: list[tuple[int, str, list[dict[str, Any]], list[Any]]] = []
    for trace in traces:
        trace_id = trace.info.trace_id
        for span in trace.data.spans:
            if str(span.span_type) not in CHAT_SPAN_TYPES:
                continue
            conversation, tools = _conversation(span, f"{experiment}:{trace_id}")
            if conversation is not None:
                calls.append((span.start_time_ns or 0, trace_id, conversation, tools))
    calls.sort(key=lambda c: c[0])
    runs = []
    for index, (_, trace_id, conversation, tools) in enumerate(calls):
        extended = any(
            len(other) > len(conversation) and other[: len(conversation)] == conversation
            for _, _, other, _ in calls[index + 1 :]
        )
        if extended or conversation[-1].get("tool_calls"):
            continue  # a step of a longer run, or a run that never answered
        record: dict[str, Any] = {"id": trace_id, "messages": conversation, "meta": {"mlflow_trace": trace_id}}
        if tools:
            record["tools"] = tools
        if retention:
            record["retention"] = dict(retention)
        runs.append(TracedRun(trace_id, record))
    ids = [run.trace_id for run in runs]
    for run in runs:  # two runs in one trace: tell them apart
        if ids.count(run.trace_id) > 1:
            run.record["id"] = f"{run.trace_id}-{ids[: runs.index(run)].count(run.trace_id) + 1}"
    if not runs:
        raise ConfigError(
            f"{tracking_uri}: experiment {experiment!r} has no traced chat run that ends in an answer"
            + (f" (filter {filter_string!r})" if filter_string else "")
        )
    return runs


def _all_traces(client, experiment_id: str, filter_string: str | None, limit: int) -> list[Any]:
    traces: list[Any] = []
    token = None
    while len(traces) < limit:
        page = client.search_traces(
            experiment_ids=[experiment_id],
            filter_string=filter_string,
            max_results=100,
            page_token=token,
            order_by=["timestamp_ms ASC"],
        )
        traces.extend(page)
        token = page.token
        if not token:
            break
    return traces[:limit]


def _conversation(span: Any, where: str) -> tuple[list[dict[str, Any]] | None, list[Any]]:
    inputs, outputs = span.inputs, span.outputs
    if isinstance(inputs, str):
        inputs = _json(inputs, where)
    if isinstance(outputs, str):
        outputs = _json(outputs, where)
    if not isinstance(inputs, Mapping) or not isinstance(inputs.get("messages"), list):
        return None, []  # not a chat-completions call (embeddings, a responses call): not a step
    choices = outputs.get("choices") if isinstance(outputs, Mapping) else None
    if not choices or not isinstance(choices[0], Mapping) or not isinstance(choices[0].get("message"), Mapping):
        return None, []  # the call failed: no reply to extend the conversation with
    messages = [_normal(m) for m in [*inputs["messages"], choices[0]["message"]]]
    return messages, list(inputs.get("tools") or [])


def _normal(message: Any) -> Any:
    """An assistant message as the API defines it: SDK dumps add `refusal`, `annotations`, ... or nulls."""
    if not isinstance(message, Mapping) or message.get("role") != "assistant":
        return message
    out = {k: v for k, v in message.items() if v is not None and k in ("role", "content", "tool_calls")}
    if out.get("tool_calls"):
        out["tool_calls"] = [
            {k: c[k] for k in ("id", "type", "function") if k in c} if isinstance(c, Mapping) else c
            for c in out["tool_calls"]
        ]
    else:
        out.pop("tool_calls", None)
    return out


def read_mlflow_runs(
    tracking_uri: str,
    experiment: str,
    suite: str,
    *,
    filter_string: str | None = None,
    retention: Mapping[str, Any] | None = None,
    seed: int = 0,
) -> list[Any]:
    """Stored replay tasks from `experiment`'s traces: the JSONL import's parser, split and conversion."""
    from optimizer.world.suite import split_by_seed
    from tasks.replay.trajectories import RunError, build_task, parse_run

    runs = []
    for number, traced in enumerate(
        traced_runs(tracking_uri, experiment, filter_string=filter_string, retention=retention), start=1
    ):
        try:
            runs.append(parse_run(traced.record, number))
        except RunError as exc:
            raise ConfigError(f"{experiment}:{traced.trace_id}: {exc}") from None
    train, _ = split_by_seed([run.id for run in runs], seed)
    return [build_task(run, suite, "train" if run.id in train else "test", f"mlflow:{experiment}") for run in runs]


def _json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise ConfigError(f"{where}: span data is not JSON") from None
