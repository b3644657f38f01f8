"""Emit an episode's span tree as one MLflow trace, linked to a run, tagged and assessed for review.

Every trace carries acon's own verdicts as MLflow feedback (success, peak tokens, blocking), so the GenAI
evaluation views and "compare to" show real columns. They are attached to the trace before it is
exported, so they cost no write of their own. A failed episode that mining pairs with a full-context
success gets the pair's tags and a `missing_facts` feedback afterwards (`mark_pair`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import mlflow
from mlflow.entities import AssessmentSource, AssessmentSourceType, Feedback, LiveSpan
from mlflow.tracing.constant import SpanAttributeKey, TraceMetadataKey
from mlflow.tracing.trace_manager import InMemoryTraceManager

from optimizer.agent.episode import Episode
from optimizer.tracking.spans import SpanNode, episode_tree

if TYPE_CHECKING:
    from mlflow.tracing.client import TracingClient

    from optimizer.mining.pair_diff import PairDiff

EPISODE_TAG = "acon.episode"
PAIR_TAG = "acon.pair"  # "<task> · <strategy>" of the pair an episode belongs to
ROLE_TAG = "acon.pair.role"  # full | compressed
KIND_TAG = "acon.pair.kind"  # failure | near_miss (the compressed run succeeded only through a recall)
MISSING_TAG = "acon.pair.missing"  # the literals the compressed context lacked, comma-separated
CHECKPOINT_TAG = "acon.pair.checkpoint"  # where they were lost (the checkpoint names)
DIFF_TAG = "acon.pair.diff"  # artifact path of the pair's side-by-side diff (HTML) ...
DIFF_RUN_TAG = "acon.pair.diff_run"  # ... in this run (the round's)
OTHER_TAG = "acon.pair.other_trace"  # the trace of the other episode of the pair
MAX_TAG = 250  # the UI's tag chips show a line; the full list is in the feedback and the diff
SOURCE = AssessmentSource(source_type=AssessmentSourceType.CODE, source_id="acon")


def episode_key(episode: Episode) -> str:
    """Identity of an episode within a run: a resumed job does not trace it twice."""
    return f"{episode.task_id}|{episode.strategy}|{episode.strategy_version}|{episode.agent}"


def episode_tags(episode: Episode) -> dict[str, str]:
    guidelines = sorted({r.guideline_version for r in episode.records if r.guideline_version})
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


def episode_assessments(episode: Episode) -> list[Feedback]:
    """acon's verdicts on one episode, as the feedback columns of MLflow's evaluation views."""
    success = episode.outcome == "success"
    reasons = "; ".join(episode.reasons) or episode.error or ("solved" if success else episode.outcome)
    out = [Feedback(name="success", value=success, source=SOURCE, rationale=reasons)]
    out.append(
        Feedback(
            name="peak_tokens",
            value=int(episode.metrics.peak_tokens),
            source=SOURCE,
            rationale="largest single agent input, system prompt excluded",
        )
    )
    out.append(
        Feedback(
            name="blocking",
            value=len(episode.blocking),
            source=SOURCE,
            rationale="; ".join(episode.blocking) or "no blocking fault",
        )
    )
    return out


def log_episode_trace(
    episode: Episode,
    *,
    started_at: float,
    experiment_id: str,
    run_id: str | None,
    tags: Mapping[str, str] | None = None,
) -> str:
    """Write the trace (exported asynchronously; flush before reading it back). Returns its id."""
    metadata = {TraceMetadataKey.SOURCE_RUN: run_id} if run_id else None
    all_tags = {**episode_tags(episode), **{k: str(v) for k, v in (tags or {}).items()}}
    root = _emit(
        episode_tree(episode),
        None,
        int(started_at * 1e9),
        experiment_id,
        all_tags,
        metadata,
        episode_assessments(episode),
    )
    return root.trace_id


def pair_tags(diff: PairDiff, *, diff_ref: tuple[str, str] | None) -> dict[str, str]:
    """The tags both traces of a pair get (the role and the other trace are added per trace)."""
    literals = ", ".join(dict.fromkeys(f.literal for f in diff.missing)) or "none found"
    checkpoints = ", ".join(dict.fromkeys(f.checkpoint_name for f in diff.missing)) or "none found"
    tags = {
        PAIR_TAG: f"{diff.task_id} · {diff.strategy}",
        MISSING_TAG: _short(literals),
        CHECKPOINT_TAG: _short(checkpoints),
    }
    if diff_ref:
        tags[DIFF_RUN_TAG], tags[DIFF_TAG] = diff_ref
    return tags


def mark_pair(
    client: TracingClient,
    diff: PairDiff,
    *,
    full_trace: str | None,
    compressed_trace: str | None,
    diff_ref: tuple[str, str] | None,
    near_miss: bool = False,
) -> None:
    """Tag both traces of a pair and give the compressed one a `missing_facts` feedback.

    The traces must already be in the store (flush first): tags and assessments are written to it.
    """
    tags = {**pair_tags(diff, diff_ref=diff_ref), KIND_TAG: "near_miss" if near_miss else "failure"}
    for trace, role, other in ((full_trace, "full", compressed_trace), (compressed_trace, "compressed", full_trace)):
        if trace is None:
            continue
        for key, value in {**tags, ROLE_TAG: role, **({OTHER_TAG: other} if other else {})}.items():
            client.set_trace_tag(trace, key, value)
    if compressed_trace is not None:
        client.log_assessment(
            compressed_trace,
            Feedback(
                name="missing_facts",
                value=[f.literal for f in diff.missing],
                source=SOURCE,
                rationale=_missing_rationale(diff),
                metadata={"pair": tags[PAIR_TAG], **({"diff": tags[DIFF_TAG]} if diff_ref else {})},
            ),
        )


def _missing_rationale(diff: PairDiff) -> str:
    if not diff.missing:
        return "the provenance diff found no missing literal; see the pair's diff"
    lines = [
        f"{f.literal} ({f.retention or 'unknown class'}): {f.checkpoint_name}, agent {f.behaviour}"
        + (f", removed by {f.record.get('stage')} {f.record.get('action')}" if f.record else "")
        for f in diff.missing
    ]
    return "; ".join(lines)


def _short(text: str) -> str:
    return text if len(text) <= MAX_TAG else text[: MAX_TAG - 1] + "…"


def _emit(
    node: SpanNode,
    parent: LiveSpan | None,
    t0_ns: int,
    experiment_id: str | None,
    tags: dict[str, str] | None,
    metadata: dict[str, str] | None,
    assessments: Sequence[Feedback] = (),
) -> LiveSpan:
    """Start, fill and end one span and its subtree; trace-level fields only on the root."""
    span = mlflow.start_span_no_context(
        node.name,
        span_type=node.span_type,
        parent_span=parent,
        inputs=node.inputs,
        attributes=node.attributes,
        tags=tags,
        metadata=metadata,
        experiment_id=experiment_id,
        start_time_ns=t0_ns + int(node.start_s * 1e9),
    )
    if node.usage is not None:
        span.set_attribute(SpanAttributeKey.CHAT_USAGE, node.usage)
    for child in node.children:
        _emit(child, span, t0_ns, None, None, None)
    if assessments:
        # Held with the trace until its root ends, then exported with it in the same store write
        # (what `mlflow.log_feedback` does for an active trace; ours are built without an active context).
        with InMemoryTraceManager.get_instance().get_trace(span.trace_id) as trace:
            if trace is None:
                raise RuntimeError(f"trace {span.trace_id} is not in MLflow's in-memory buffer")
            for assessment in assessments:
                assessment.trace_id = span.trace_id
                trace.info.assessments.append(assessment)
    status = "ERROR" if node.error else "OK"
    span.end(outputs=node.outputs, status=status, end_time_ns=t0_ns + int(node.end_s * 1e9))
    return span
