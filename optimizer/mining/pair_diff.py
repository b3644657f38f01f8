"""The provenance diff: for a pair, what the failing step needed, where it was lost, and by whom.

Deterministic, no model. For tier 0 the reference agent recorded exactly which needed literal it
could not see and what it did instead. For tier 1 the first step where the two agents acted
differently is the divergence, and the needed literals are the reference needs (or the full run's
argument values) that the full request showed and the compressed request did not.

Each missing literal is traced back through the compressed episode: the content it came from (and so
its retention class), the first checkpoint at which it was absent at the divergence step, and the
compression record that removed it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from optimizer.agent.episode import CHECKPOINTS, Episode
from optimizer.world.needs import occurs
from optimizer.world.task import Task
from optimizer.world.tool import ToolCall


@dataclass(frozen=True)
class MissingFact:
    literal: str
    kind: str  # value | rule | receipt | page | error (from the reference need), or "value" in tier 1
    behaviour: str  # guess | skip | repeat | diverged
    retention: str | None  # class of the content the literal came from
    checkpoint: int | None  # first checkpoint (2-5) where it was absent at the step; None: never present
    step: int
    source_entry: int | None = None
    record: dict[str, Any] | None = None  # the compression record that removed it

    @property
    def checkpoint_name(self) -> str:
        return CHECKPOINTS.get(self.checkpoint, "never in context") if self.checkpoint else "never in context"


@dataclass
class PairDiff:
    task_id: str
    strategy: str
    divergence_step: int | None
    missing: list[MissingFact]
    full_reasons: list[str]
    compressed_reasons: list[str]
    blocking: list[str]
    full_context: str = field(repr=False, default="")
    compressed_context: str = field(repr=False, default="")
    # Tier 1: why the real agent failed (optimizer.mining.causes), beside what was missing; None at tier 0,
    # where a failure is always a fact the reference agent could not see.
    cause: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for fact, raw in zip(self.missing, data["missing"], strict=True):
            raw["checkpoint_name"] = fact.checkpoint_name
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PairDiff:
        fields = dict(data)
        fields["missing"] = [
            MissingFact(**{k: v for k, v in m.items() if k != "checkpoint_name"}) for m in data["missing"]
        ]
        return cls(**fields)


def diff_pair(full: Episode, compressed: Episode, task: Task | None = None) -> PairDiff:
    if compressed.deviations:
        step_index, missing = _from_deviations(compressed)
    else:
        step_index, missing = _from_divergence(full, compressed, task)
    divergence = compressed.steps[step_index].step if step_index is not None else None
    full_index = _index_of_step(full, divergence)
    return PairDiff(
        task_id=compressed.task_id,
        strategy=compressed.strategy,
        divergence_step=divergence,
        missing=missing,
        full_reasons=list(full.reasons),
        compressed_reasons=list(compressed.reasons),
        blocking=list(compressed.blocking),
        full_context=_request_text(full, full_index),
        compressed_context=_request_text(compressed, step_index),
    )


def _from_deviations(compressed: Episode) -> tuple[int | None, list[MissingFact]]:
    missing = []
    first_index = None
    for deviation in compressed.deviations:
        index = _index_of_step(compressed, deviation.step)
        if first_index is None:
            first_index = index
        missing.append(_trace(compressed, deviation.literal, deviation.kind, deviation.behaviour, index))
    return first_index, missing


def _from_divergence(full: Episode, compressed: Episode, task: Task | None) -> tuple[int | None, list[MissingFact]]:
    index = None
    for i, (a, b) in enumerate(zip(full.steps, compressed.steps, strict=False)):
        if _action_key(a.action) != _action_key(b.action):
            index = i
            break
    if index is None:
        index = min(len(full.steps), len(compressed.steps)) - 1
        if index < 0:
            return None, []
    literals = _candidate_literals(full, task, index)
    full_text = _request_text(full, index)
    compressed_text = _request_text(compressed, index)
    missing = [
        _trace(compressed, literal, kind, "diverged", index)
        for literal, kind in literals
        if occurs(literal, full_text) and not occurs(literal, compressed_text)
    ]
    return index, missing


def _candidate_literals(full: Episode, task: Task | None, index: int) -> list[tuple[str, str]]:
    out: dict[str, str] = {}
    if task is not None and task.reference:
        for reference_step in task.reference:
            for need in reference_step.needs:
                out.setdefault(need.literal, need.kind.value)
    from optimizer.world.needs import find_needs

    outputs = [full.text(e.raw) for e in full.entries if e.kind == "result"]
    users = [full.text(e.raw) for e in full.entries if e.kind in ("task", "user")]
    for step in full.steps[index:]:
        for call in step.action.get("calls", []):
            tool_call = ToolCall(call["id"], call["name"], call["arguments"])
            for need in find_needs(tool_call, user_texts=users, tool_outputs=outputs):
                out.setdefault(need.literal, "value")
    return list(out.items())


def _trace(episode: Episode, literal: str, kind: str, behaviour: str, index: int | None) -> MissingFact:
    source = next((e for e in episode.entries if e.kind == "result" and occurs(literal, episode.text(e.raw))), None)
    retention = source.retention.value if source and source.retention else None
    checkpoint = episode.lost_at(literal, index) if index is not None else None
    step = episode.steps[index].step if index is not None else -1
    record = _responsible_record(episode, source.id if source else None, checkpoint, step)
    return MissingFact(
        literal=literal,
        kind=kind,
        behaviour=behaviour,
        retention=retention,
        checkpoint=checkpoint,
        step=step,
        source_entry=source.id if source else None,
        record=record,
    )


_STAGE_OF_CHECKPOINT = {2: "write", 3: "replay", 4: "budget"}


def _responsible_record(episode: Episode, entry_id: int | None, checkpoint: int | None, step: int) -> dict | None:
    if entry_id is None or checkpoint is None:
        return None
    stage = _STAGE_OF_CHECKPOINT.get(checkpoint)
    candidates = [
        r for r in episode.records if entry_id in r.entry_ids and r.step <= step and (stage is None or r.stage == stage)
    ]
    if not candidates:
        return None
    record = candidates[-1]
    return {
        "strategy": record.strategy,
        "stage": record.stage,
        "action": record.action,
        "step": record.step,
        "tokens_before": record.tokens_before,
        "tokens_after": record.tokens_after,
        "guideline_version": record.guideline_version,
        "dropped_by_class": dict(record.dropped_by_class),
    }


def _index_of_step(episode: Episode, step: int | None) -> int | None:
    if step is None:
        return None
    for i, record in enumerate(episode.steps):
        if record.step == step:
            return i
    return len(episode.steps) - 1 if episode.steps else None


def _request_text(episode: Episode, index: int | None) -> str:
    if index is None or not episode.steps:
        return ""
    index = min(index, len(episode.steps) - 1)
    step = episode.steps[index]
    return "\n\n".join(f"[{m['role']}]\n{episode.text(m['text'])}" for m in step.request if m["role"] != "system")


def _action_key(action: dict[str, Any]) -> str:
    calls = [(c["name"], sorted(c["arguments"].items(), key=lambda kv: kv[0])) for c in action.get("calls", [])]
    return repr((calls, action.get("answer"), bool(action.get("malformed"))))
