"""The bundled Qwen models' JSON actions, read as OpenAI `tool_calls`.

Given `tools=`, Qwen2.5-Coder 0.5B and 1.5B answer with the call as JSON in the message text (most often
fenced, ```` ```json {"name": "read_doc", "arguments": {...}} ``` ````, sometimes bare or inside
`<tool_call>` tags) and llama-server returns no `tool_calls`, so an OpenAI SDK loop or LangChain's
`create_agent` stops after one request. This reads those actions back as the calls they are. Only an
object whose `name` is one of the request's tools and whose `arguments` (or `parameters`) is an object
counts: a final answer that merely contains JSON stays text.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

_WRAPPED = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>|```[a-zA-Z]*[ \t]*\n?(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class Action:
    name: str
    arguments: str  # a JSON object, as OpenAI's `function.arguments` carries it


def read_actions(text: str, tool_names: Iterable[str]) -> tuple[list[Action], str]:
    """The tool calls written in `text`, and the text left once they are taken out (stripped)."""
    names = set(tool_names)
    actions: list[Action] = []
    kept: list[str] = []
    position = 0
    for match in _WRAPPED.finditer(text):
        inner = match.group(1) if match.group(1) is not None else match.group(2)
        found = _whole(inner.strip(), names)
        if found:
            kept.append(text[position : match.start()])
            actions += found
            position = match.end()
    kept.append(text[position:])
    rest = "".join(kept)
    bare, rest = _bare(rest, names)
    return actions + bare, rest.strip()


def tool_call_dicts(actions: Sequence[Action], salt: str) -> list[dict[str, Any]]:
    """OpenAI `tool_calls` entries; ids are stable for the same reply (`salt`) so a retried parse agrees."""
    calls = []
    for index, action in enumerate(actions):
        digest = hashlib.sha256(f"{salt}\0{index}\0{action.name}\0{action.arguments}".encode()).hexdigest()[:24]
        calls.append(
            {
                "id": f"call_{digest}",
                "type": "function",
                "function": {"name": action.name, "arguments": action.arguments},
            }
        )
    return calls


def _whole(text: str, names: set[str]) -> list[Action]:
    """The actions `text` consists of entirely (one object or a list of them), else none."""
    try:
        data, end = _DECODER.raw_decode(text)
    except json.JSONDecodeError:
        return []
    if text[end:].strip():
        return []
    items = data if isinstance(data, list) else [data]
    actions = [_action(item, names) for item in items]
    return [a for a in actions if a is not None] if items and all(actions) else []


def _bare(text: str, names: set[str]) -> tuple[list[Action], str]:
    """Unwrapped action objects anywhere in `text`, and the text without them."""
    actions: list[Action] = []
    kept: list[str] = []
    position = index = 0
    while (index := text.find("{", index)) >= 0:
        try:
            data, end = _DECODER.raw_decode(text, index)
        except json.JSONDecodeError:
            index += 1
            continue
        action = _action(data, names)
        if action is None:
            index += 1
            continue
        start, end = _with_stray_braces(text, index, end)
        kept.append(text[position:start])
        actions.append(action)
        position = index = end
    kept.append(text[position:])
    return actions, "".join(kept)


def _with_stray_braces(text: str, start: int, end: int) -> tuple[int, int]:
    """The span of an action widened over the unmatched braces the 1.5B model sometimes doubles around it.

    Given a custom system prompt it writes `{{"name": ..., "arguments": {...}}}}`; left behind, the stray
    `{` and `}}` become the reply's text, and the model copies that text from its history on the next turn.
    """
    while start > 0 and text[start - 1] == "{":
        start -= 1
    while end < len(text) and text[end] == "}":
        end += 1
    return start, end


def _action(item: Any, names: set[str]) -> Action | None:
    if not isinstance(item, dict) or item.get("name") not in names:
        return None
    arguments = item.get("arguments", item.get("parameters"))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return None
    if not isinstance(arguments, dict):
        return None
    return Action(item["name"], json.dumps(arguments, ensure_ascii=False))
