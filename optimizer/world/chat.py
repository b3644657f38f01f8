"""Reading OpenAI chat messages: a message's text and its tool calls, with one-line errors naming where.

The replay importer (recorded runs) and the runtime (a live conversation) read the same format; each
passes the exception its callers expect (`RunError` is prefixed with the file and line, `ConfigError`
reaches the CLI).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from optimizer.errors import ConfigError
from optimizer.untrusted import parse_json
from optimizer.world.tool import ToolCall


def message_text(message: Mapping[str, Any], where: str, error: type[Exception] = ConfigError) -> str:
    """The message's content: a string, null, or a list of text parts (joined)."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            text = part.get("text") if isinstance(part, Mapping) and part.get("type") == "text" else None
            if not isinstance(text, str):
                kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
                raise error(f"{where}: content part of type {kind!r} is not supported (text parts only)")
            texts.append(text)
        return "".join(texts)
    raise error(f"{where}: 'content' must be a string, null or a list of text parts")


def parse_tool_call(
    item: Any, where: str, calls: dict[str, ToolCall], error: type[Exception] = ConfigError
) -> ToolCall:
    """One entry of an assistant message's `tool_calls`, recorded in `calls` (an id may be used once)."""
    function = item.get("function") if isinstance(item, Mapping) else None
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str) or not function["name"]:
        raise error(f"{where}: each tool call needs 'function' with a 'name'")
    call_id = item.get("id")
    if not isinstance(call_id, str) or not call_id:
        raise error(f"{where}: tool call {function['name']!r} has no 'id'")
    if call_id in calls:
        raise error(f"{where}: tool call id {call_id!r} is used twice")
    arguments = function.get("arguments", "{}")
    if isinstance(arguments, str):
        try:
            arguments = parse_json(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise error(f"{where}: arguments of tool call {call_id!r} are not valid JSON: {exc.msg}") from None
    if not isinstance(arguments, dict):
        raise error(f"{where}: arguments of tool call {call_id!r} must be a JSON object")
    call = ToolCall(call_id, function["name"], arguments)
    calls[call_id] = call
    return call


def status_flags(message: Mapping[str, Any], where: str, error: type[Exception] = ConfigError) -> dict[str, bool]:
    """A tool message's runtime status (`is_error`, `partial`), false when absent."""
    flags = {}
    for key in ("is_error", "partial"):
        value = message.get(key, False)
        if not isinstance(value, bool):
            raise error(f"{where}: '{key}' must be true or false")
        flags[key] = value
    return flags
