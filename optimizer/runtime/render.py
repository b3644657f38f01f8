"""Checkpoint 5: turn the (budgeted) view into the chat request actually sent."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from optimizer.context.history import Entry, EntryKind


def action_json(entry: Entry) -> str:
    """Canonical JSON of an action, as the JSON-mode agent is asked to write it."""
    if entry.answer is not None and not entry.calls:
        return json.dumps({"tool": "finish", "arguments": {"answer": entry.answer}}, ensure_ascii=False)
    payload = [{"tool": c.name, "arguments": dict(c.arguments)} for c in entry.calls]
    return json.dumps(payload[0] if len(payload) == 1 else payload, ensure_ascii=False)


class SentMessage(dict[str, Any]):
    """A message of a request the runtime built: an ordinary dict to read, send or serialize, but read-only.

    The runtime hands the very same message objects out again in later requests (so a call costs what is new,
    not a copy of every message of the conversation), so an edit made on one would change later requests too:
    it is refused. `dict(message)`, `message.copy()` and `copy.deepcopy(message)` are ordinary dicts to edit.
    What a message holds (a `tool_calls` list) is shared the same way and is not to be edited either.
    """

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError(
            "a message of a request the runtime built is read-only (later requests share it): "
            "edit a copy, dict(message)"
        )

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _refuse

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return copy.deepcopy(dict(self), memo)

    def __reduce__(self) -> tuple[type[dict[str, Any]], tuple[dict[str, Any]]]:
        return dict, (dict(self),)


def render_messages(
    system_prompt: str,
    view: Sequence[Entry],
    *,
    native_tools: bool,
    memo: RenderMemo | None = None,
    texts: Mapping[int, str] | None = None,
) -> list[dict[str, Any]]:
    """The request for `view`. With a `memo`, an entry rendered by an earlier call is not rendered again:
    the messages are then shared with the memo and later requests (read-only `SentMessage`s). A native
    request through a `memo` also leaves there, as `memo.sent`, the request with the assistants' own
    `texts` (by action entry id) in place of what the rendering shows for them."""
    system = SentMessage(role="system", content=system_prompt)
    if memo is not None:
        return memo.native(system, view, texts or {}) if native_tools else memo.json(system, view)
    messages: list[dict[str, Any]] = [system]
    for entry in view:
        messages.extend(entry_messages(entry, native_tools))
    return _merge_consecutive_users(messages) if not native_tools else messages


def common_prefix(previous: Sequence[Any], current: Sequence[Any]) -> int:
    """How many leading items two sequences share (compared with `==`)."""
    # Consecutive requests share most of their objects, and comparing slices passes a shared object without
    # looking inside: a binary search over slices costs far less than comparing item by item in Python.
    # Lists are sliced as they are (a tuple would never equal a list: other sequences are made lists once).
    before = previous if isinstance(previous, list) else list(previous)
    after = current if isinstance(current, list) else list(current)
    low, high = 0, min(len(before), len(after))
    while low < high:
        middle = (low + high + 1) // 2
        if before[low:middle] == after[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def entry_messages(entry: Entry, native_tools: bool) -> list[dict[str, Any]]:
    """The messages one view entry becomes (before a JSON-mode request merges consecutive user messages)."""
    if entry.kind is EntryKind.TASK or entry.kind is EntryKind.USER:
        return [{"role": "user", "content": entry.content}]
    if entry.kind is EntryKind.SUMMARY:
        return [{"role": "user", "content": f"<history_summary>\n{entry.content}\n</history_summary>"}]
    if entry.kind is EntryKind.NOTICE:
        return [{"role": "user", "content": f"[harness] {entry.content}"}]
    if entry.kind is EntryKind.ACTION:
        if native_tools and entry.calls:
            calls = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(dict(c.arguments), ensure_ascii=False)},
                }
                for c in entry.calls
            ]
            return [{"role": "assistant", "content": None, "tool_calls": calls}]
        return [{"role": "assistant", "content": action_json(entry)}]
    if entry.kind is EntryKind.RESULT:
        call = entry.call
        if native_tools and call is not None:
            return [{"role": "tool", "tool_call_id": call.id, "content": entry.content}]
        name = call.name if call else "?"
        status = " (error)" if entry.is_error else ""
        return [{"role": "user", "content": f"Tool result of {name}{status}:\n{entry.content}"}]
    return []


class RenderMemo:
    """The messages each shown entry rendered to, kept while that very entry object is shown.

    Replay hands back the same `Entry` object for an entry no edit touched since, so identity says the
    rendering is still valid; an edited entry is a new object and is rendered again.
    """

    def __init__(self) -> None:
        self._rendered: dict[tuple[int, bool], tuple[Entry, list[dict[str, Any]]]] = {}
        self._view: list[Entry] = []  # the view of the last native request, one message per entry after the system
        self._native: list[dict[str, Any]] = []
        # The last native request as a user's agent gets it back: each assistant's own text shown again (a caller
        # gets a copy of this list, never the list).
        self.sent: list[dict[str, Any]] = []
        self._carried: tuple[list[dict[str, Any]], int] | None = None  # (a request, messages the last took from it)
        # The last JSON-mode request, its view, and for each entry of the view the message it went into (the
        # consecutive user messages of a JSON-mode request are merged into one).
        self._json: list[dict[str, Any]] = []
        self._json_view: list[Entry] = []
        self._slots: list[int] = []

    def native(self, system: dict[str, Any], view: Sequence[Entry], texts: Mapping[int, str]) -> list[dict[str, Any]]:
        """A native request: the last one's messages up to the first entry that changed, the rest rendered.

        An entry's text is fixed when its action is added, before it is first rendered, so the kept
        messages of `sent` still hold the right ones: `texts` is read for the entries rendered now only.
        """
        kept = common_prefix(self._view, view)
        self._carried = (self._native, kept)
        messages = self._native[: kept + 1] or [system]
        messages[0] = system
        sent = self.sent  # edited in place: only copies of it leave the runtime (the request is `messages`)
        del sent[kept + 1 :]
        sent[:1] = [system]
        for entry in view[kept:]:
            rendered = self.messages(entry, True)
            messages.extend(rendered)
            text = texts.get(entry.id)
            sent.extend(rendered if text is None else [SentMessage(message, content=text) for message in rendered])
        self._view, self._native, self.sent = view if isinstance(view, list) else list(view), messages, sent
        return messages

    def json(self, system: dict[str, Any], view: Sequence[Entry]) -> list[dict[str, Any]]:
        """A JSON-mode request: the last one's messages before the first entry that changed, the rest rendered.

        A changed entry (or a new one) may merge into the message of the entry before it, so that message is
        merged again from the first entry in it.
        """
        kept = common_prefix(self._json_view, view)
        first = kept - 1 if kept else 0
        while first > 0 and self._slots[first - 1] == self._slots[kept - 1]:
            first -= 1
        messages = self._json[: self._slots[first]] if self._slots else []
        self._carried = (self._json, max(0, len(messages) - 1))
        messages[:1] = [system]
        slots = self._slots[:first]
        for entry in view[first:]:
            (message,) = self.messages(entry, False)  # one message per entry, as in a native request
            if message["role"] == "user" and messages[-1]["role"] == "user" and len(messages) > 1:
                messages[-1] = SentMessage(role="user", content=f"{messages[-1]['content']}\n\n{message['content']}")
            else:
                messages.append(message)
            slots.append(len(messages) - 1)
        self._json, self._json_view, self._slots = messages, view if isinstance(view, list) else list(view), slots
        return messages

    def shared_with(self, request: Sequence[Mapping[str, Any]] | None) -> int:
        """How many messages after the system message the last native request took from `request` as they were."""
        if self._carried is None or self._carried[0] is not request:
            return 0
        return self._carried[1]

    def messages(self, entry: Entry, native_tools: bool) -> list[dict[str, Any]]:
        key = (entry.id, native_tools)
        cached = self._rendered.get(key)
        if cached is not None and cached[0] is entry:
            return cached[1]
        rendered: list[dict[str, Any]] = [SentMessage(message) for message in entry_messages(entry, native_tools)]
        self._rendered[key] = (entry, rendered)
        return rendered


def _merge_consecutive_users(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Chat templates of small models expect user/assistant alternation; several results of one step
    # become one user message.
    merged: list[dict[str, Any]] = []
    for message in messages:
        if merged and message["role"] == "user" and merged[-1]["role"] == "user" and len(merged) > 1:
            merged[-1] = SentMessage(role="user", content=f"{merged[-1]['content']}\n\n{message['content']}")
        else:
            merged.append(message)
    return merged


def request_text(messages: Sequence[Mapping[str, Any]], *, include_system: bool = False) -> str:
    """All text of a request, for visibility checks: what is not in here, the model cannot see."""
    parts = []
    for message in messages:
        if message["role"] == "system" and not include_system:
            continue
        if message.get("content"):
            parts.append(str(message["content"]))
        for call in message.get("tool_calls") or ():
            parts.append(f"{call['function']['name']}({call['function']['arguments']})")
    return "\n".join(parts)
