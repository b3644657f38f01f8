"""Episodes to JSON-able dicts and back: the one place an episode's typed records meet their stored form.

Each line of a run's `episodes.jsonl` carries `format` (`RUN_FORMAT`). Steps are stored as deltas (each
step's checkpoint lists against the previous step's: histories grow at the end); texts stay in the
episode's content-addressed table. Format-4 lines (written before lines carried a format) and format-5
lines (before fact visibility) have the same shape and are read as is; a line of any other format fails
with one line naming the run directory.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from optimizer.agent.episode import Episode, StepRecord
from optimizer.agent.episode_records import DeviationRecord, EntryRecord, EpisodeMetrics, ToolCallRecord
from optimizer.context.history import EntryKind
from optimizer.context.record import CompressionRecord
from optimizer.errors import AconError
from optimizer.llm.usage import Usage
from optimizer.world.retention import RetentionClass
from optimizer.world.tool import ToolCall

RUN_FORMAT = 6
"""Bumped when a change makes episodes recorded before it unfit for reuse, or changes how they are stored
(1: keys held the strategy's config; 3: honest tier-0 recall; 4: the oracle matches literals one by one,
compressors quarantine planted instructions; 5: typed records, each episode line carries its format;
6: tier-0 episodes record fact visibility)."""

# Formats this code reads: the current one, 5 (no fact visibility: it reads as not measured) and 4 (format-5
# lines without the tag).
READABLE_FORMATS = (4, 5, RUN_FORMAT)
CHECKPOINT_LISTS = ("replayed", "budgeted", "request")


class RunFormatError(AconError):
    """A stored episode written in a format this code does not read."""


def encode_episode(episode: Episode) -> dict[str, Any]:
    """The JSON-able record of an episode; each step's checkpoint lists as a delta against the previous."""
    steps, previous = [], None
    for step in episode.steps:
        row = {f.name: _plain(getattr(step, f.name)) for f in dataclasses.fields(step)}
        if previous is not None:
            for name in CHECKPOINT_LISTS:
                row[name] = _delta(getattr(previous, name), getattr(step, name))
        steps.append(row)
        previous = step
    return {
        "format": RUN_FORMAT,
        "task_id": episode.task_id,
        "suite": episode.suite,
        "strategy": episode.strategy,
        "strategy_version": episode.strategy_version,
        "agent": episode.agent,
        "outcome": episode.outcome,
        "reasons": list(episode.reasons),
        "blocking": list(episode.blocking),
        "error": episode.error,
        "answers": list(episode.answers),
        "steps": steps,
        "entries": [_entry_dict(e) for e in episode.entries],
        "records": [encode_record(r) for r in episode.records],
        "texts": dict(episode.texts),
        "deviations": [dataclasses.asdict(d) for d in episode.deviations],
        "tool_calls": [_tool_call_dict(c) for c in episode.tool_calls],
        "system_prompt_tokens": episode.system_prompt_tokens,
        "token_source": episode.token_source,
        "wall_s": episode.wall_s,
        "metrics": dataclasses.asdict(episode.metrics),
    }


def decode_episode(data: Mapping[str, Any], *, where: Path | str | None = None) -> Episode:
    """The episode a stored record holds; `where` (the run directory) names it in a format error."""
    data = upgrade(data, where=where)
    steps: list[StepRecord] = []
    for row in data.get("steps", []):
        row = dict(row)
        for name in CHECKPOINT_LISTS:
            if isinstance(row[name], dict):  # {"same": k, "then": [...]}: the previous step's first k, then more
                row[name] = [*getattr(steps[-1], name)[: row[name]["same"]], *row[name]["then"]]
        steps.append(StepRecord(**row))
    return Episode(
        task_id=data["task_id"],
        suite=data["suite"],
        strategy=data["strategy"],
        strategy_version=data["strategy_version"],
        agent=data["agent"],
        outcome=data["outcome"],
        reasons=list(data.get("reasons", ())),
        blocking=list(data.get("blocking", ())),
        error=data.get("error"),
        answers=list(data.get("answers", ())),
        steps=steps,
        entries=[_entry(e) for e in data.get("entries", ())],
        records=[decode_record(r) for r in data.get("records", ())],
        texts=dict(data.get("texts", {})),
        deviations=[DeviationRecord(**d) for d in data.get("deviations", ())],
        tool_calls=[_tool_call(c) for c in data.get("tool_calls", ())],
        system_prompt_tokens=data.get("system_prompt_tokens", 0),
        token_source=data.get("token_source", "counted"),
        wall_s=data.get("wall_s", 0.0),
        metrics=decode_metrics(data.get("metrics")),
    )


def upgrade(data: Mapping[str, Any], *, where: Path | str | None = None) -> Mapping[str, Any]:
    """A stored record in the current format, or `RunFormatError` when it is in one this code cannot read."""
    found = data.get("format", 4)
    if found == RUN_FORMAT:
        return data
    if found in (4, 5):
        # Formats 4 and 5 stored the same fields in the same shape; the tag and the visibility counts
        # (absent: None, not measured) are what is new.
        return {**data, "format": RUN_FORMAT}
    place = f"{where}: " if where is not None else ""
    raise RunFormatError(
        f"{place}episodes are in run format {found!r}, this acon reads {', '.join(map(str, READABLE_FORMATS))}: "
        "re-run into a new directory (or delete this one) to record them again"
    )


def decode_metrics(data: Mapping[str, Any] | None) -> EpisodeMetrics:
    """An episode's metrics; a record without them (an episode that never finished) reads as zeros."""
    return EpisodeMetrics(**data) if data else EpisodeMetrics()


def encode_record(record: CompressionRecord) -> dict[str, Any]:
    data = dataclasses.asdict(record)
    data["compressor_usage"] = record.compressor_usage.to_dict() if record.compressor_usage else None
    data["entry_ids"] = list(record.entry_ids)
    data["handles"] = list(record.handles)
    data["dropped_by_class"] = dict(record.dropped_by_class)
    data["compressor_io"] = list(record.compressor_io) if record.compressor_io else None
    return data


def decode_record(data: Mapping[str, Any]) -> CompressionRecord:
    fields = dict(data)
    fields["entry_ids"] = tuple(fields.get("entry_ids", ()))
    fields["handles"] = tuple(fields.get("handles", ()))
    usage = fields.get("compressor_usage")
    fields["compressor_usage"] = Usage.from_dict(usage) if usage else None
    io = fields.get("compressor_io")
    fields["compressor_io"] = (io[0], io[1]) if io else None
    return CompressionRecord(**fields)


def _entry_dict(entry: EntryRecord) -> dict[str, Any]:
    return {
        "id": entry.id,
        "kind": entry.kind.value,
        "step": entry.step,
        "turn": entry.turn,
        "visible_from": entry.visible_from,
        "text": entry.text,
        "raw": entry.raw,
        "tokens": entry.tokens,
        "retention": entry.retention.value if entry.retention else None,
        "call": entry.call.to_dict() if entry.call else None,
        "calls": [c.to_dict() for c in entry.calls],
        "answer": entry.answer,
        "must_keep": list(entry.must_keep),
        "is_error": entry.is_error,
    }


def _entry(data: Mapping[str, Any]) -> EntryRecord:
    call = data.get("call")
    return EntryRecord(
        id=data["id"],
        kind=EntryKind(data["kind"]),
        step=data["step"],
        turn=data["turn"],
        visible_from=data["visible_from"],
        text=data["text"],
        raw=data["raw"],
        tokens=data["tokens"],
        retention=RetentionClass(data["retention"]) if data.get("retention") else None,
        call=_call(call) if call else None,
        calls=tuple(_call(c) for c in data.get("calls", ())),
        answer=data.get("answer"),
        must_keep=tuple(data.get("must_keep", ())),
        is_error=data.get("is_error", False),
    )


def _call(data: Mapping[str, Any]) -> ToolCall:
    return ToolCall(data["id"], data["name"], dict(data["arguments"]))


def _tool_call_dict(call: ToolCallRecord) -> dict[str, Any]:
    data = {f.name: getattr(call, f.name) for f in dataclasses.fields(call)}
    data["arguments"] = _plain(call.arguments)
    data["retention"] = call.retention.value if call.retention else None
    return data


def _tool_call(data: Mapping[str, Any]) -> ToolCallRecord:
    fields = dict(data)
    fields["arguments"] = dict(fields["arguments"])
    fields["retention"] = RetentionClass(fields["retention"]) if fields.get("retention") else None
    return ToolCallRecord(**fields)


def _delta(previous: list[Any], current: list[Any]) -> list[Any] | dict[str, Any]:
    same = 0
    for old, new in zip(previous, current, strict=False):
        if old != new:
            break
        same += 1
    return {"same": same, "then": _plain(current[same:])} if same else _plain(current)


def _plain(value: Any) -> Any:
    """A copy deep enough that editing the stored dict never edits the episode."""
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value
