"""OpenAI chat messages into runtime entries, one message at a time.

The shapes are the Chat Completions API's: `system` / `developer` (only before the first user message),
`user`, `assistant` (text and/or `tool_calls`), `tool` (`tool_call_id`, `content`). A tool message may
carry the runtime status the JSONL import reads (`is_error`, `partial`, `must_keep`): the runtime never
infers an error from the text. Content is a string, null or a list of text parts.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from optimizer.context.recall import RECALL_SPEC, RECALL_TOOL
from optimizer.errors import ConfigError
from optimizer.world.chat import message_text, parse_tool_call, status_flags
from optimizer.world.tool import ToolOutput

if TYPE_CHECKING:
    from optimizer.runtime.conversation import ContextRuntime


def fingerprint(message: Mapping[str, Any], where: str) -> str:
    try:
        payload = json.dumps(message, sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(payload.encode()).hexdigest()
    except RecursionError:
        raise ConfigError(f"{where}: nested too deep for Python's JSON encoder") from None
    except UnicodeEncodeError as exc:  # a lone surrogate: no request body could carry it
        raise ConfigError(f"{where}: lone surrogate \\u{ord(exc.object[exc.start]):04x} (not valid Unicode)") from None


def leading_system(messages: Sequence[Mapping[str, Any]]) -> tuple[str | None, list[Mapping[str, Any]]]:
    """The system / developer messages before the first other message (joined), and the rest."""
    texts: list[str] = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or message.get("role") not in ("system", "developer"):
            return ("\n\n".join(texts) if texts else None), list(messages[index:])
        texts.append(message_text(message, f"message {index} ({message['role']})"))
    return ("\n\n".join(texts) if texts else None), []


def ingest(runtime: ContextRuntime, message: Mapping[str, Any], index: int) -> None:
    """Add one message to the runtime's history (write-time moves run on tool results)."""
    if not isinstance(message, Mapping):
        raise ConfigError(f"message {index}: expected an object, not {type(message).__name__}")
    role = message.get("role")
    where = f"message {index} ({role})"
    history = runtime.history
    if role in ("system", "developer"):
        raise ConfigError(f"{where}: a system message after the conversation started is not supported")
    if role != "user" and not history.entries:
        raise ConfigError(f"{where}: comes before the first user message")
    if role == "user":
        if message.get("content") is None:  # read as "" it would become a task with no request
            raise ConfigError(f"{where}: 'content' is null; a user message needs its text")
        text = message_text(message, where)
        if history.entries:
            runtime.add_user(text)
        else:
            runtime.start(text)
    elif role == "assistant":
        _assistant(runtime, message, where)
    elif role == "tool":
        _tool(runtime, message, where)
    else:
        raise ConfigError(f"{where}: unknown role {role!r} (system, user, assistant, tool)")


def _assistant(runtime: ContextRuntime, message: Mapping[str, Any], where: str) -> None:
    if message.get("function_call"):
        raise ConfigError(f"{where}: legacy 'function_call' is not supported; send 'tool_calls'")
    text = message_text(message, where)
    tool_calls = message.get("tool_calls") or []
    if not isinstance(tool_calls, list):
        raise ConfigError(f"{where}: 'tool_calls' must be a list")
    calls = [parse_tool_call(item, where, runtime._seen.calls) for item in tool_calls]
    entry = runtime.add_action(calls=calls) if calls else runtime.add_action(answer=text)
    if text or not calls:
        runtime._seen.texts[entry.id] = text


def _tool(runtime: ContextRuntime, message: Mapping[str, Any], where: str) -> None:
    call_id = message.get("tool_call_id")
    call = runtime._seen.calls.get(call_id) if isinstance(call_id, str) else None
    if call is None:
        raise ConfigError(f"{where}: tool_call_id {call_id!r} matches no earlier tool call")
    if call.id in runtime._seen.answered:
        raise ConfigError(f"{where}: a second result for tool call {call.id!r}")
    content = message_text(message, where)
    flags = status_flags(message, where)
    must_keep = message.get("must_keep", [])
    if not isinstance(must_keep, list) or not all(isinstance(line, str) for line in must_keep):
        raise ConfigError(f"{where}: 'must_keep' must be a list of strings")
    if call.name == RECALL_TOOL:
        original = runtime.store.get(str(call.arguments.get("handle", "")))
        if original is None:  # the runtime's own tool: it knows the call failed
            output = ToolOutput(content, is_error=True)
        else:
            output = ToolOutput(content, must_keep=original.must_keep)
    else:
        output = ToolOutput(content, is_error=flags["is_error"], partial=flags["partial"], must_keep=tuple(must_keep))
    runtime.add_result(call, output, RECALL_SPEC if call.name == RECALL_TOOL else None)
    runtime._seen.answered.add(call.id)
