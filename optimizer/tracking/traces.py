"""Emit an episode's span tree as one MLflow trace, linked to a run and tagged for filtering."""

from __future__ import annotations

from collections.abc import Mapping

import mlflow
from mlflow.entities import LiveSpan
from mlflow.tracing.constant import SpanAttributeKey, TraceMetadataKey

from optimizer.agent.episode import Episode
from optimizer.tracking.spans import SpanNode, episode_tree

EPISODE_TAG = "acon.episode"


def episode_key(episode: Episode) -> str:
    """Identity of an episode within a run: a resumed job does not trace it twice."""
    return f"{episode.task_id}|{episode.strategy}|{episode.strategy_version}|{episode.agent}"


def episode_tags(episode: Episode) -> dict[str, str]:
    guidelines = sorted({r["guideline_version"] for r in episode.records if r.get("guideline_version")})
    tags = {
        EPISODE_TAG: episode_key(episode),
        "acon.task": episode.task_id,
        "acon.suite": episode.suite,
        "acon.strategy": episode.strategy,
        "acon.strategy_version": episode.strategy_version,
        "acon.agent": episode.agent,
        "acon.outcome": episode.outcome,
    }
    if guidelines:
        tags["acon.guideline"] = ",".join(guidelines)
    return tags


def log_episode_trace(
    episode: Episode, *, started_at: float, experiment_id: str, run_id: str | None,
    tags: Mapping[str, str] | None = None,
) -> str:
    """Write the trace (exported asynchronously; flush before reading it back). Returns its id."""
    metadata = {TraceMetadataKey.SOURCE_RUN: run_id} if run_id else None
    all_tags = {**episode_tags(episode), **{k: str(v) for k, v in (tags or {}).items()}}
    root = _emit(episode_tree(episode), None, int(started_at * 1e9), experiment_id, all_tags, metadata)
    return root.trace_id


def _emit(node: SpanNode, parent: LiveSpan | None, t0_ns: int, experiment_id: str | None,
          tags: dict[str, str] | None, metadata: dict[str, str] | None) -> LiveSpan:
    """Start, fill and end one span and its subtree; trace-level fields only on the root."""
    span = mlflow.start_span_no_context(
        node.name, span_type=node.span_type, parent_span=parent, inputs=node.inputs,
        attributes=node.attributes, tags=tags, metadata=metadata, experiment_id=experiment_id,
        start_time_ns=t0_ns + int(node.start_s * 1e9),
    )
    if node.usage is not None:
        span.set_attribute(SpanAttributeKey.CHAT_USAGE, node.usage)
    for child in node.children:
        _emit(child, span, t0_ns, None, None, None)
    status = "ERROR" if node.error else "OK"
    span.end(outputs=node.outputs, status=status, end_time_ns=t0_ns + int(node.end_s * 1e9))
    return span
