"""Which retention class a live agent's tool results belong to: set by the user, never read from output.

A `RetentionMap` says, per tool name, its class and whether it writes (a write's result is a
`write_receipt`); a predicate on the tool name and the call's arguments can refine it (a `read_file`
under `skills/` is a `skill`). It builds the same `ToolSpec`s the project's suites register, so a result
is classified by exactly the code the agent loop uses (`classify_result`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from optimizer.errors import ConfigError
from optimizer.world.retention import RetentionClass
from optimizer.world.tool import ToolCall, ToolOutput, ToolSpec, classify_result

# (tool name, call arguments) -> a class, or None to keep the tool's registered class.
CallClassifier = Callable[[str, Mapping[str, Any]], RetentionClass | str | None]

_CLASSES = ", ".join(c.value for c in RetentionClass)
_EMPTY_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True)
class ToolRetention:
    """One tool's retention metadata."""

    retention_class: RetentionClass = RetentionClass.UNKNOWN
    side_effect: bool = False  # the tool writes: its result is a receipt, and a repeat is a duplicate write


def retention_class(value: RetentionClass | str, *, where: str) -> RetentionClass:
    if isinstance(value, RetentionClass):
        return value
    try:
        return RetentionClass(value)
    except ValueError:
        raise ConfigError(f"{where}: unknown retention class {value!r} (one of {_CLASSES})") from None


def _tool_retention(name: str, value: Any) -> ToolRetention:
    if isinstance(value, ToolRetention):
        return value
    if isinstance(value, RetentionClass | str):
        return ToolRetention(retention_class(value, where=f"retention[{name!r}]"))
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - {"retention_class", "side_effect"})
        if unknown:
            allowed = "retention_class, side_effect"
            raise ConfigError(f"retention[{name!r}]: unknown key {unknown[0]!r} (allowed: {allowed})")
        side_effect = value.get("side_effect", False)
        if not isinstance(side_effect, bool):
            raise ConfigError(f"retention[{name!r}]: side_effect must be true or false")
        default = RetentionClass.WRITE_RECEIPT if side_effect else RetentionClass.UNKNOWN
        cls = retention_class(value.get("retention_class", default), where=f"retention[{name!r}]")
        return ToolRetention(cls, side_effect)
    raise ConfigError(f"retention[{name!r}]: expected a class name or {{retention_class, side_effect}}")


class RetentionMap:
    """Tool name -> retention metadata, plus an optional classifier on (name, arguments).

    `tools` values are a class name (`"static"`), a `ToolRetention`, or the JSONL import's form
    `{"retention_class": "static", "side_effect": false}`. A tool in neither `tools` nor the
    classifier's answer is `unknown`, which every stage keeps.
    """

    def __init__(
        self,
        tools: Mapping[str, Any] | None = None,
        *,
        classify: CallClassifier | None = None,
        specs: Iterable[ToolSpec] = (),
    ) -> None:
        self._specs: dict[str, ToolSpec] = {spec.name: spec for spec in specs}
        self._classify = classify
        for name, value in (tools or {}).items():
            meta = _tool_retention(name, value)
            self._specs[name] = ToolSpec(name, "", _EMPTY_SCHEMA, meta.retention_class, meta.side_effect)

    @classmethod
    def from_specs(cls, specs: Iterable[ToolSpec]) -> RetentionMap:
        """The metadata a suite registered with its tools (what the agent loop classifies by)."""
        return cls(specs=specs)

    def spec(self, name: str) -> ToolSpec | None:
        spec = self._specs.get(name)
        if self._classify is None:
            return spec
        base = spec or ToolSpec(name, "", _EMPTY_SCHEMA)
        classify = self._classify

        def refined(arguments: Mapping[str, Any]) -> RetentionClass | None:
            answer = classify(name, arguments)
            if answer is None:
                return base.classify_call(arguments) if base.classify_call else None
            return retention_class(answer, where=f"classifier for {name!r}")

        return ToolSpec(
            base.name, base.description, base.parameters, base.retention_class, base.side_effect, classify_call=refined
        )

    def classify(self, call: ToolCall, output: ToolOutput) -> RetentionClass:
        return classify_result(self.spec(call.name), call, output)

    def side_effect(self, name: str) -> bool:
        spec = self._specs.get(name)
        return bool(spec and spec.side_effect)


def as_retention_map(value: RetentionMap | Mapping[str, Any] | CallClassifier | None) -> RetentionMap:
    if value is None:
        return RetentionMap()
    if isinstance(value, RetentionMap):
        return value
    if isinstance(value, Mapping):
        return RetentionMap(value)
    if callable(value):
        return RetentionMap(classify=value)
    raise ConfigError(f"retention must be a mapping, a RetentionMap or a classifier, not {type(value).__name__}")


def read_retention_file(path) -> dict[str, ToolRetention]:
    """A JSON file `{tool: class | {retention_class, side_effect}}`, as the JSONL import's `retention`."""
    import json
    from pathlib import Path

    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ConfigError(f"retention file not found: {path}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected an object mapping tool names to retention metadata")
    return {name: _tool_retention(name, value) for name, value in data.items()}
