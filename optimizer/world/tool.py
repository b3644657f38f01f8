"""Tools as registered by a suite, calls as made by an agent, outputs as returned by a runtime."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from optimizer.world.retention import RetentionClass

ArgumentClassifier = Callable[[Mapping[str, Any]], RetentionClass | None]


@dataclass(frozen=True)
class ToolSpec:
    """A tool and its retention metadata, set by whoever registers the tool.

    `classify_call` lets the registration refine the class from the call's arguments (a `read_file`
    under the skills folder is a `skill`); it never sees the output.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    retention_class: RetentionClass = RetentionClass.UNKNOWN
    side_effect: bool = False
    classify_call: ArgumentClassifier | None = field(default=None, compare=False)

    def openai_schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": dict(self.parameters)},
        }


@dataclass(frozen=True)
class ToolCall:
    """One call an agent made: a tool name and JSON-able arguments."""

    id: str
    name: str
    arguments: Mapping[str, Any]

    def signature(self) -> str:
        return f"{self.name}({json.dumps(self.arguments, sort_keys=True, ensure_ascii=False)})"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": dict(self.arguments)}


@dataclass(frozen=True)
class ToolOutput:
    """What the tool runtime returned.

    `is_error` and `partial` are runtime status (an exception, an error status, a page with more
    pages), not something read from the text. `must_keep` lists the lines the runtime vouches are
    load-bearing (the error line, the "showing 1-20 of 47" warning, a receipt's id and status); the
    retention contract keeps them through every stage.
    """

    content: str
    is_error: bool = False
    partial: bool = False
    must_keep: tuple[str, ...] = ()

    @classmethod
    def vouched(cls, line: str) -> ToolOutput:
        """A one-line result the runtime vouches for whole, as a write receipt is."""
        return cls(line, must_keep=(line,))


def classify_result(spec: ToolSpec | None, call: ToolCall, output: ToolOutput) -> RetentionClass:
    """Retention class of one result, from registration metadata and runtime status only."""
    if spec is None:
        return RetentionClass.UNKNOWN
    if spec.side_effect and not output.is_error:
        return RetentionClass.WRITE_RECEIPT
    if output.is_error or output.partial:
        return RetentionClass.ERROR_PARTIAL
    if spec.classify_call is not None:
        refined = spec.classify_call(call.arguments)
        if refined is not None:
            return refined
    return spec.retention_class


def object_schema(**properties: str) -> dict[str, Any]:
    """A JSON-schema object whose properties are all required, each of the JSON type given by name."""
    return {
        "type": "object",
        "properties": {name: {"type": kind} for name, kind in properties.items()},
        "required": list(properties),
    }
