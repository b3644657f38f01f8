"""Recorded successful runs (OpenAI chat format, JSON Lines) turned into replay tasks.

The file format
---------------

One run per line (blank lines are skipped), a JSON object with these keys:

```
{"id": "refund-17",                      optional string or int: the task id (default "run-<line>"), unique
 "messages": [                           required: the run, as sent to / returned by an OpenAI chat API
   {"role": "system", "content": "..."},                          optional; text the agent always has
   {"role": "user", "content": "..."},                            the task; later user messages: later turns
   {"role": "assistant", "content": null,
    "tool_calls": [{"id": "c1", "type": "function",
                    "function": {"name": "get_order", "arguments": "{\"order_id\": \"A-1\"}"}}]},
   {"role": "tool", "tool_call_id": "c1", "content": "...",
    "is_error": false,                                            optional: the runtime reported a failure
    "partial": false,                                             optional: a page of a longer result
    "must_keep": ["line the runtime vouches for"]},               optional: lines no stage may cut
   {"role": "assistant", "content": "final answer"}               no tool_calls: the turn's answer
 ],
 "tools": [{"type": "function", "function": {"name": ..., "description": ..., "parameters": {...}}}],
 "retention": {"get_order": {"retention_class": "dynamic_state", "side_effect": false},
               "refund_order": {"side_effect": true}},
 "meta": {...}}                          optional: any JSON object, kept as the task's meta
```

Any other top-level key (a recorded run's `model`, `score`, `trace_id`, ...) is kept in the task's meta
under its own name, and `meta["extra_keys"]` lists which were; a key both at the top level and in
`meta` is an error.

- `content` is a string, null, or a list of `{"type": "text", "text": ...}` parts; `arguments` is a JSON
  object, as a string (OpenAI's form) or inline. Parallel tool calls are replayed one after another.
- `tools` (optional) are OpenAI tool schemas (the bare `{"name", "description", "parameters"}` form
  works too); a called tool missing from them gets an empty schema.
- Retention metadata comes only from `retention`: `retention_class` is one of `skill`, `static`,
  `dynamic_state`, `write_receipt`, `error_partial`, `unknown` (the default), and `side_effect: true`
  marks a write, whose result is a `write_receipt` (the class it defaults to) and which must not be
  repeated. A tool not listed is `unknown` (kept by every strategy). Nothing is read from the output
  text: a result is an error only when its message says `"is_error": true` (content such as
  `{"error": ...}` is not enough), and then it is `error_partial`, as is a `"partial": true` page. An
  error result without `must_keep` keeps its first non-empty line.

What is made of a run: the user messages are the turns (consecutive ones are joined); the recorded
calls, in order, are the reference solution, each annotated with the values it copied from an earlier
tool output (`optimizer.world.needs.find_needs`, with the tool schemas and system messages as
text the agent always has, so a value named there is not a need); the tool messages are what the
replay environment answers (`tasks.replay.env`). Success means every recorded call was made again
and no write more often than recorded.

Any problem is one `ConfigError` line `FILE:LINE: ...` (exit 2), raised before anything is written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optimizer.errors import ConfigError
from optimizer.untrusted import parse_json
from optimizer.world.chat import message_text, parse_tool_call, status_flags
from optimizer.world.needs import find_needs
from optimizer.world.retention import RetentionClass
from optimizer.world.suite import split_by_seed
from optimizer.world.task import ReferenceStep
from optimizer.world.tool import ToolCall, ToolOutput, ToolSpec, classify_result
from tasks.replay.store import RecordedCall, StoredTask, StoredTool

RUN_KEYS = frozenset({"id", "messages", "tools", "retention", "meta"})
# Names, in a task's meta, of the run's top-level keys beyond RUN_KEYS that were moved into it.
EXTRA_KEYS = "extra_keys"
RETENTION_KEYS = frozenset({"retention_class", "side_effect"})
EMPTY_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {}}


class RunError(ValueError):
    """A problem inside one run; the reader prefixes the file and line."""


@dataclass
class Run:
    """One parsed line: turns, calls grouped by the assistant message that made them, outputs by call id."""

    line: int
    id: str
    turns: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    system: list[str] = field(default_factory=list)
    batches: list[tuple[int, list[ToolCall]]] = field(default_factory=list)
    outputs: dict[str, ToolOutput] = field(default_factory=dict)
    tools: dict[str, ToolSpec] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)


def read_trajectories(path: Path, suite: str, *, seed: int = 0) -> list[StoredTask]:
    """Parse and convert every run of `path`; the split is seeded and 50/50."""
    runs = parse_file(path)
    train, _ = split_by_seed([run.id for run in runs], seed)
    source = path.name
    return [build_task(run, suite, "train" if run.id in train else "test", source) for run in runs]


def parse_file(path: Path) -> list[Run]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"trajectory file not found: {path}") from None
    except (IsADirectoryError, PermissionError) as exc:
        raise ConfigError(f"{path}: cannot read ({type(exc).__name__})") from None
    runs: list[Run] = []
    first_line: dict[str, int] = {}
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ConfigError(f"{path}:{number}: not UTF-8 text") from None
        try:
            obj = parse_json(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{number}: invalid JSON ({exc.msg} at column {exc.colno})") from None
        try:
            run = parse_run(obj, number)
        except RunError as exc:
            raise ConfigError(f"{path}:{number}: {exc}") from None
        if run.id in first_line:
            first = first_line[run.id]
            raise ConfigError(f"{path}:{number}: duplicate run id {run.id!r} (first on line {first})")
        first_line[run.id] = number
        runs.append(run)
    if not runs:
        raise ConfigError(f"{path}: no runs (the file is empty)")
    return runs


def parse_run(obj: Any, line: int) -> Run:
    if not isinstance(obj, dict):
        raise RunError(f"a run must be a JSON object, not {type(obj).__name__}")
    run_id = obj.get("id", f"run-{line}")
    if isinstance(run_id, bool) or not isinstance(run_id, str | int) or not str(run_id).strip():
        raise RunError("'id' must be a non-empty string or an integer")
    run = Run(line=line, id=str(run_id))
    meta = obj.get("meta", {})
    if not isinstance(meta, dict):
        raise RunError("'meta' must be a JSON object")
    # Recorded runs carry ids, scores, model versions: kept in meta (and listed there), never a refusal.
    extra = sorted(set(obj) - RUN_KEYS)
    clash = [key for key in [*extra, EXTRA_KEYS] if key in meta]
    if extra and clash:
        raise RunError(f"top-level key {clash[0]!r} is also in 'meta'; keep one")
    run.meta = {**meta, **{key: obj[key] for key in extra}, EXTRA_KEYS: extra} if extra else meta
    messages = obj.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RunError("'messages' must be a non-empty list")
    _read_messages(run, messages)
    retention = _retention_map(obj.get("retention", {}))
    run.tools = _tool_specs(obj.get("tools", []), retention, run)
    return run


def _read_messages(run: Run, messages: Sequence[Any]) -> None:
    calls: dict[str, ToolCall] = {}
    previous: str | None = None
    for position, message in enumerate(messages, start=1):
        where = f"message {position}"
        if not isinstance(message, dict):
            raise RunError(f"{where} must be a JSON object")
        role = message.get("role")
        where = f"message {position} ({role})"
        if role == "system":
            run.system.append(message_text(message, where, RunError))
            continue
        if role in ("assistant", "tool") and not run.turns:
            raise RunError(f"{where} comes before the first user message")
        if role == "user":
            if message.get("content") is None:  # read as "" it would become a task with no request
                raise RunError(f"{where}: 'content' is null; a user message needs its text")
            text = message_text(message, where, RunError)
            if previous == "user":
                run.turns[-1] += "\n\n" + text
            else:
                run.turns.append(text)
                run.answers.append("")
        elif role == "assistant":
            if message.get("function_call"):
                raise RunError(f"{where}: legacy 'function_call' is not supported; record 'tool_calls'")
            tool_calls = message.get("tool_calls") or []
            if not isinstance(tool_calls, list):
                raise RunError(f"{where}: 'tool_calls' must be a list")
            if tool_calls:
                batch = [parse_tool_call(item, where, calls, RunError) for item in tool_calls]
                run.batches.append((len(run.turns) - 1, batch))
            else:
                run.answers[-1] = message_text(message, where, RunError)
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in calls:
                raise RunError(f"{where}: tool_call_id {call_id!r} matches no earlier tool call")
            if call_id in run.outputs:
                raise RunError(f"{where}: a second result for tool call {call_id!r}")
            run.outputs[call_id] = _tool_output(message, where)
        else:
            hint = "; record calls as 'tool_calls' and results as role 'tool'" if role == "function" else ""
            raise RunError(f"{where}: unknown role {role!r}{hint}")
        previous = role
    if not run.turns:
        raise RunError("the run has no user message")
    missing = [call for call in calls.values() if call.id not in run.outputs]
    if missing:
        raise RunError(f"tool call {missing[0].id!r} ({missing[0].name}) has no tool message with its result")


def _tool_output(message: Mapping[str, Any], where: str) -> ToolOutput:
    content = message_text(message, where, RunError)
    flags = status_flags(message, where, RunError)
    keep = message.get("must_keep")
    if keep is None:
        first = next((line for line in content.splitlines() if line.strip()), None)
        keep = [first] if flags["is_error"] and first is not None else []
    if not isinstance(keep, list) or not all(isinstance(line, str) and line for line in keep):
        raise RunError(f"{where}: 'must_keep' must be a list of non-empty strings")
    absent = next((line for line in keep if line not in content), None)
    if absent is not None:
        raise RunError(f"{where}: must_keep line {absent[:60]!r} is not in the content")
    return ToolOutput(content, is_error=flags["is_error"], partial=flags["partial"], must_keep=tuple(keep))


def _retention_map(data: Any) -> dict[str, tuple[RetentionClass, bool]]:
    if not isinstance(data, dict):
        raise RunError("'retention' must be an object mapping tool names to their metadata")
    known = ", ".join(c.value for c in RetentionClass)
    out = {}
    for name, entry in data.items():
        if not isinstance(entry, dict):
            raise RunError(f"retention of {name!r} must be an object")
        unknown = sorted(set(entry) - RETENTION_KEYS)
        if unknown:
            keys = " and ".join(sorted(RETENTION_KEYS))
            raise RunError(f"retention of {name!r}: unknown key {unknown[0]!r} (only {keys})")
        side_effect = entry.get("side_effect", False)
        if not isinstance(side_effect, bool):
            raise RunError(f"retention of {name!r}: 'side_effect' must be true or false")
        default = RetentionClass.WRITE_RECEIPT if side_effect else RetentionClass.UNKNOWN
        value = entry.get("retention_class", default.value)
        try:
            retention = RetentionClass(value)
        except ValueError:
            raise RunError(f"retention of {name!r}: unknown retention_class {value!r} ({known})") from None
        out[name] = (retention, side_effect)
    return out


def _tool_specs(data: Any, retention: Mapping[str, tuple[RetentionClass, bool]], run: Run) -> dict[str, ToolSpec]:
    if not isinstance(data, list):
        raise RunError("'tools' must be a list of OpenAI tool schemas")
    specs: dict[str, ToolSpec] = {}

    def add(name: str, description: str, parameters: Mapping[str, Any]) -> None:
        retention_class, side_effect = retention.get(name, (RetentionClass.UNKNOWN, False))
        specs[name] = ToolSpec(name, description, parameters, retention_class, side_effect)

    for position, item in enumerate(data, start=1):
        function = item.get("function", item) if isinstance(item, dict) else None
        if not (isinstance(function, dict) and isinstance(function.get("name"), str) and function["name"]):
            raise RunError(f"tool {position} needs a 'name' (an OpenAI tool schema)")
        name = function["name"]
        if name in specs:
            raise RunError(f"tool {name!r} is listed twice")
        parameters = function.get("parameters", EMPTY_SCHEMA)
        if not isinstance(parameters, dict):
            raise RunError(f"tool {name!r}: 'parameters' must be a JSON schema object")
        description = function.get("description", "")
        add(name, description if isinstance(description, str) else "", parameters)
    for _, batch in run.batches:
        for call in batch:
            if call.name not in specs:
                add(call.name, "", EMPTY_SCHEMA)
    return specs


def build_task(run: Run, suite: str, split: str, source: str) -> StoredTask:
    """The reference solution (recorded calls with their needs) and the recording of one run."""
    known = [json.dumps(spec.openai_schema(), ensure_ascii=False) for spec in run.tools.values()] + run.system
    outputs: list[str] = []
    classes: list[str | None] = []
    reference: list[ReferenceStep] = []
    recording: list[RecordedCall] = []
    batches = iter(run.batches)
    pending = next(batches, None)
    for turn in range(len(run.turns)):
        while pending is not None and pending[0] == turn:
            # Calls made together (parallel tool calls) did not see each other's output.
            seen, seen_classes = list(outputs), list(classes)
            for call in pending[1]:
                needs = find_needs(
                    call,
                    user_texts=run.turns[: turn + 1],
                    tool_outputs=seen,
                    known_texts=known,
                    output_classes=seen_classes,
                )
                output = run.outputs[call.id]
                reference.append(ReferenceStep(turn=turn, call=call, needs=needs))
                recording.append(RecordedCall(turn, call, output))
                outputs.append(output.content)
                classes.append(classify_result(run.tools[call.name], call, output).value)
            pending = next(batches, None)
        reference.append(ReferenceStep(turn=turn, answer=run.answers[turn]))
    per_turn = [sum(len(b) for t, b in run.batches if t == turn) for turn in range(len(run.turns))]
    meta: dict[str, Any] = {"source": source, "line": run.line, "calls": len(recording)}
    if run.system:
        meta["system"] = "\n\n".join(run.system)
    return StoredTask(
        id=run.id,
        suite=suite,
        split=split,
        turns=tuple(run.turns),
        tools=tuple(StoredTool(spec) for spec in run.tools.values()),
        reference=tuple(reference),
        recording=tuple(recording),
        # One step per call, room for one recall and one repeated write each, and the answer.
        max_steps_per_turn=2 * max(per_turn) + 6,
        meta={**run.meta, **meta},
    )
