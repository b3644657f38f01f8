"""Replay suites on disk: one Parquet row per task, written and read through `datasets`.

A row holds everything a replay needs, as JSON text in string columns, so any suite can be stored
this way and loaded back without its code: `acon suites import` writes recorded runs, `acon suites
export` writes any suite (its reference solution replayed once through its own environment supplies
the recorded outputs).

| column | content |
|---|---|
- `id`, `suite`, `split`: task id, suite name, `train` / `test` (`unsplit` for a task in neither).
- `instruction`: the first user turn (for reading the table; `turns` is authoritative).
- `turns`: JSON list of user messages, one per turn.
- `tools`: JSON list of `{name, description, parameters, retention_class, side_effect, from_turn}`.
- `reference`: JSON list of steps `{turn, call: {id, name, arguments} or null, answer, needs}`; a need
  is `{kind, literal, argument, guess, repeat, source_class}`.
- `recording`: JSON list of `{turn, call, output: {content, is_error, partial, must_keep}, call_class}`,
  what the environment answers to each recorded call.
- `max_steps_per_turn`: the task's step limit per user turn.
- `meta`: JSON object (family, category, source file and line, ...).
- `schema_version`: this layout's version (1).

`call_class` is the class the registration gave that call from its arguments (a `read_file` under the
skills folder is a `skill` while the tool is `static`); null when the tool's own class applies.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optimizer.errors import ConfigError
from optimizer.world.retention import RetentionClass
from optimizer.world.suite import Suite
from optimizer.world.task import Need, NeedKind, ReferenceStep, Task
from optimizer.world.tool import ToolCall, ToolOutput, ToolSpec

SCHEMA_VERSION = 1
COLUMNS = (
    "id",
    "suite",
    "split",
    "instruction",
    "turns",
    "tools",
    "reference",
    "recording",
    "max_steps_per_turn",
    "meta",
    "schema_version",
)
UNSPLIT = "unsplit"


@dataclass(frozen=True)
class StoredTool:
    """A registered tool as stored: its spec (without an argument classifier) and the turn it appears in."""

    spec: ToolSpec
    from_turn: int = 0


@dataclass(frozen=True)
class RecordedCall:
    """One recorded call and what the tool returned to it."""

    turn: int
    call: ToolCall
    output: ToolOutput
    call_class: RetentionClass | None = None


@dataclass(frozen=True)
class StoredTask:
    """A replayable task: the pure data behind one Parquet row (`tasks.replay.env.replay_task` runs it)."""

    id: str
    suite: str
    split: str
    turns: tuple[str, ...]
    tools: tuple[StoredTool, ...]
    reference: tuple[ReferenceStep, ...]
    recording: tuple[RecordedCall, ...]
    max_steps_per_turn: int
    meta: Mapping[str, Any] = field(default_factory=dict)


# -- building stored tasks from a live suite (`acon suites export`)


def stored_from_suite(suite: Suite) -> list[StoredTask]:
    """Every task of `suite`, with its reference calls replayed once through a fresh environment."""
    stored = []
    for task in suite.tasks:
        split = "train" if task.id in suite.train_ids else "test" if task.id in suite.test_ids else UNSPLIT
        stored.append(stored_from_task(task, split))
    return stored


def stored_from_task(task: Task, split: str) -> StoredTask:
    if task.reference is None:
        raise ConfigError(f"task {task.id!r} of suite {task.suite!r} has no reference solution to store")
    env = task.make_env()
    try:
        tools: dict[str, StoredTool] = {}
        specs_by_turn = []
        for turn in range(len(task.turns)):
            specs = {spec.name: spec for spec in env.tools(turn)}
            specs_by_turn.append(specs)
            for name, spec in specs.items():
                tools.setdefault(name, StoredTool(_plain(spec), from_turn=turn))
        recording = []
        for step in task.reference:
            if step.call is None:
                continue
            step_spec = specs_by_turn[min(step.turn, len(specs_by_turn) - 1)].get(step.call.name)
            refined = step_spec.classify_call(step.call.arguments) if step_spec and step_spec.classify_call else None
            output = env.call(step.call, step.turn)
            recording.append(RecordedCall(step.turn, step.call, output, refined))
    finally:
        env.close()
    return StoredTask(
        id=task.id,
        suite=task.suite,
        split=split,
        turns=tuple(t.content for t in task.turns),
        tools=tuple(tools.values()),
        reference=task.reference,
        recording=tuple(recording),
        max_steps_per_turn=task.max_steps_per_turn,
        meta=dict(task.meta),
    )


def _plain(spec: ToolSpec) -> ToolSpec:
    return ToolSpec(spec.name, spec.description, spec.parameters, spec.retention_class, spec.side_effect)


# -- rows


def to_row(task: StoredTask) -> dict[str, Any]:
    return {
        "id": task.id,
        "suite": task.suite,
        "split": task.split,
        "instruction": task.turns[0] if task.turns else "",
        "turns": _dumps(list(task.turns)),
        "tools": _dumps([_tool_dict(t) for t in task.tools]),
        "reference": _dumps([step_dict(s) for s in task.reference]),
        "recording": _dumps([_recorded_dict(r) for r in task.recording]),
        "max_steps_per_turn": task.max_steps_per_turn,
        "meta": _dumps(dict(task.meta)),
        "schema_version": SCHEMA_VERSION,
    }


def from_row(row: Mapping[str, Any]) -> StoredTask:
    return StoredTask(
        id=str(row["id"]),
        suite=str(row["suite"]),
        split=str(row["split"]),
        turns=tuple(str(t) for t in json.loads(row["turns"])),
        tools=tuple(_tool(t) for t in json.loads(row["tools"])),
        reference=tuple(_step(s) for s in json.loads(row["reference"])),
        recording=tuple(_recorded(r) for r in json.loads(row["recording"])),
        max_steps_per_turn=int(row["max_steps_per_turn"]),
        meta=json.loads(row["meta"]),
    )


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=_jsonable)


def _jsonable(value: Any) -> Any:
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    return str(value)


def call_dict(call: ToolCall) -> dict[str, Any]:
    return {"id": call.id, "name": call.name, "arguments": dict(call.arguments)}


def _call(data: Mapping[str, Any]) -> ToolCall:
    return ToolCall(str(data["id"]), str(data["name"]), dict(data["arguments"]))


def need_dict(need: Need) -> dict[str, Any]:
    return {
        "kind": need.kind.value,
        "literal": need.literal,
        "argument": need.argument,
        "guess": need.guess,
        "repeat": call_dict(need.repeat) if need.repeat is not None else None,
        "source_class": need.source_class,
        "shown_as": need.shown_as,
    }


def _need(data: Mapping[str, Any]) -> Need:
    return Need(
        kind=NeedKind(data["kind"]),
        literal=str(data["literal"]),
        argument=data.get("argument"),
        guess=data.get("guess"),
        repeat=_call(data["repeat"]) if data.get("repeat") else None,
        source_class=data.get("source_class"),
        shown_as=data.get("shown_as"),
    )


def step_dict(step: ReferenceStep) -> dict[str, Any]:
    return {
        "turn": step.turn,
        "call": call_dict(step.call) if step.call is not None else None,
        "answer": step.answer,
        "needs": [need_dict(n) for n in step.needs],
    }


def _step(data: Mapping[str, Any]) -> ReferenceStep:
    return ReferenceStep(
        turn=int(data["turn"]),
        call=_call(data["call"]) if data.get("call") else None,
        answer=data.get("answer"),
        needs=tuple(_need(n) for n in data.get("needs", ())),
    )


def _tool_dict(tool: StoredTool) -> dict[str, Any]:
    spec = tool.spec
    return {
        "name": spec.name,
        "description": spec.description,
        "parameters": dict(spec.parameters),
        "retention_class": spec.retention_class.value,
        "side_effect": spec.side_effect,
        "from_turn": tool.from_turn,
    }


def _tool(data: Mapping[str, Any]) -> StoredTool:
    spec = ToolSpec(
        name=str(data["name"]),
        description=str(data.get("description", "")),
        parameters=dict(data.get("parameters") or {"type": "object", "properties": {}}),
        retention_class=RetentionClass(data.get("retention_class", "unknown")),
        side_effect=bool(data.get("side_effect", False)),
    )
    return StoredTool(spec, int(data.get("from_turn", 0)))


def _recorded_dict(recorded: RecordedCall) -> dict[str, Any]:
    output = recorded.output
    return {
        "turn": recorded.turn,
        "call": call_dict(recorded.call),
        "output": {
            "content": output.content,
            "is_error": output.is_error,
            "partial": output.partial,
            "must_keep": list(output.must_keep),
        },
        "call_class": recorded.call_class.value if recorded.call_class is not None else None,
    }


def _recorded(data: Mapping[str, Any]) -> RecordedCall:
    output = data["output"]
    return RecordedCall(
        turn=int(data["turn"]),
        call=_call(data["call"]),
        output=ToolOutput(
            str(output["content"]),
            is_error=bool(output.get("is_error", False)),
            partial=bool(output.get("partial", False)),
            must_keep=tuple(output.get("must_keep", ())),
        ),
        call_class=RetentionClass(data["call_class"]) if data.get("call_class") else None,
    )


# -- Parquet


def _features():
    from datasets import Features, Value

    return Features(
        {
            **{name: Value("string") for name in COLUMNS if name not in ("max_steps_per_turn", "schema_version")},
            "max_steps_per_turn": Value("int64"),
            "schema_version": Value("int64"),
        }
    )


def write_parquet(tasks: Sequence[StoredTask], path: Path) -> Path:
    """Write `tasks` as one Parquet file, atomically (a reader sees the old file or the new one)."""
    from datasets import Dataset

    dataset = Dataset.from_list([to_row(t) for t in tasks], features=_features())
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{uuid.uuid4().hex[:12]}.tmp"
    try:
        dataset.to_parquet(str(tmp))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def read_parquet(path: Path) -> list[StoredTask]:
    """Read a replay suite file; any problem is one `ConfigError` line naming the file (and row)."""
    import pyarrow.parquet as pq
    from datasets import Dataset

    try:
        table = pq.read_table(path)
    except FileNotFoundError:
        raise ConfigError(f"replay suite file not found: {path}") from None
    except Exception as exc:  # pyarrow raises several types for a file that is not Parquet
        raise ConfigError(f"{path}: not a readable Parquet file ({type(exc).__name__})") from None
    # Wrapping the table reads it through `datasets` without writing a cache copy (from_parquet would).
    dataset = Dataset(table)
    missing = [c for c in COLUMNS if c not in dataset.column_names]
    if missing:
        raise ConfigError(f"{path}: not a replay suite file (missing columns {', '.join(missing)})")
    tasks = []
    for index, row in enumerate(dataset):
        if row["schema_version"] != SCHEMA_VERSION:
            raise ConfigError(
                f"{path}: row {index + 1} has schema version {row['schema_version']}, "
                f"this acon reads version {SCHEMA_VERSION}"
            )
        try:
            tasks.append(from_row(row))
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"{path}: row {index + 1} (task {row.get('id')!r}) is malformed: {type(exc).__name__}: {exc}"[:300]
            ) from None
    if not tasks:
        raise ConfigError(f"{path}: the replay suite has no tasks")
    return tasks
