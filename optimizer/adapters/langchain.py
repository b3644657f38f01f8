"""LangChain 1.x: acon's middleware, and the loader of `acon export --format langchain`.

```python
from optimizer.adapters.langchain import AconMiddleware, middleware_from

middleware = middleware_from("guideline.langchain.json", model=ChatOpenAI(model=...))  # LangChain's own
agent = create_agent(model, tools, middleware=middleware)
```

`middleware_from` builds LangChain's own middleware objects (`ContextEditingMiddleware` with its
`ClearToolUsesEdit`s, `SummarizationMiddleware`) from the export: what of the guideline maps onto them,
as the export's loss report says. `AconMiddleware` runs the whole guideline instead.

The export is data read from a file: only the middleware classes the exporter writes are built (a
named class outside them is refused, never imported), and the summarization model is the caller's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optimizer.adapters.langchain_middleware import AconMiddleware
from optimizer.adapters.native_targets import CLEAR_TOOL_USES, CONTEXT_EDITING, SUMMARIZATION
from optimizer.errors import ConfigError

if TYPE_CHECKING:
    from langchain.agents.middleware import AgentMiddleware
    from langchain_core.language_models import BaseChatModel

    from optimizer.adapters.native_export import NativeExport


def middleware_from(
    export: NativeExport | Mapping[str, Any] | str | Path, *, model: str | BaseChatModel | None = None
) -> list[AgentMiddleware]:
    """The middleware objects of a LangChain export (its JSON file, its parsed JSON, or `export_native`'s
    result), in the export's order; `model` summarizes where the guideline summarizes."""
    from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware, SummarizationMiddleware

    settings, source = _settings(export)
    built: list[AgentMiddleware] = []
    for index, spec in enumerate(_list(settings.get("middleware", []), f"{source}: middleware")):
        where = f"{source}: middleware[{index}]"
        cls, kwargs = _spec(spec, where)
        if cls == CONTEXT_EDITING:
            edits = []
            for number, edit in enumerate(_list(kwargs.pop("edits", []), f"{where}.edits")):
                edit_cls, edit_kwargs = _spec(edit, f"{where}.edits[{number}]")
                if edit_cls != CLEAR_TOOL_USES:
                    raise ConfigError(f"{where}.edits[{number}]: {edit_cls!r} is not an edit acon exports")
                edits.append(_build(ClearToolUsesEdit, edit_kwargs, f"{where}.edits[{number}]"))
            built.append(_build(ContextEditingMiddleware, {**kwargs, "edits": edits}, where))
        elif cls == SUMMARIZATION:
            if model is None:
                raise ConfigError(f"{where}: the guideline summarizes; pass model= (the summarization model)")
            # JSON has no tuples; LangChain's trigger and keep are (kind, value) pairs.
            for key in ("trigger", "keep"):
                if isinstance(kwargs.get(key), list):
                    kwargs[key] = tuple(kwargs[key])
            built.append(_build(SummarizationMiddleware, {**kwargs, "model": model}, where))
        else:
            raise ConfigError(f"{where}: {cls!r} is not a middleware acon exports")
    return built


def _settings(export: Any) -> tuple[Mapping[str, Any], str]:
    if isinstance(export, str | Path):
        path = Path(export)
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise ConfigError(f"{path}: no such export (write one with `acon export --format langchain`)") from None
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}: invalid JSON (line {exc.lineno}): {exc.msg}") from None
        return _from_dict(data, str(path))
    from optimizer.adapters.native_export import NativeExport

    if isinstance(export, NativeExport):
        return _from_dict(export.to_dict(), "the export")
    return _from_dict(export, "the export")


def _from_dict(data: Any, source: str) -> tuple[Mapping[str, Any], str]:
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: not a LangChain export (expected the JSON of `acon export --format langchain`)")
    if "settings" in data:  # the whole export, as `acon export` writes it
        if data.get("format") != "langchain":
            raise ConfigError(f"{source}: --format {data.get('format')}, not langchain")
        data = data["settings"]
    if not isinstance(data, Mapping) or not set(data) <= {"middleware"}:
        raise ConfigError(f"{source}: not a LangChain export (expected the JSON of `acon export --format langchain`)")
    return data, source


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ConfigError(f"{where}: expected a list")
    return value


def _spec(spec: Any, where: str) -> tuple[str, dict[str, Any]]:
    if not isinstance(spec, Mapping) or not isinstance(spec.get("class"), str):
        raise ConfigError(f"{where}: expected {{'class': ..., 'kwargs': {{...}}}}")
    kwargs = spec.get("kwargs", {})
    if not isinstance(kwargs, Mapping):
        raise ConfigError(f"{where}.kwargs: expected an object")
    return spec["class"], dict(kwargs)


def _build(cls: Any, kwargs: dict[str, Any], where: str) -> Any:
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:  # an edited export: a renamed or mistyped keyword
        raise ConfigError(f"{where}: {cls.__name__} refused the export's settings: {exc}") from None


__all__ = ["AconMiddleware", "middleware_from"]
