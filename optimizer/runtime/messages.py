"""OpenAI chat messages read for the runtime, one message at a time.

The shapes are the Chat Completions API's: `system` / `developer` (only before the first user message),
`user`, `assistant` (text and/or `tool_calls`), `tool` (`tool_call_id`, `content`). A tool message may
carry the runtime status the JSONL import reads (`is_error`, `partial`, `must_keep`): the runtime never
infers an error from the text. Content is a string, null or a list of text parts.

`SeenMessages` is what a runtime remembers of the messages `compact` was given: it refuses a rewritten
conversation and reads each new message into the step the runtime then adds (`UserMessage`,
`AssistantMessage`, `ToolMessage`); the runtime applies it through its own step-wise methods.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from optimizer.context.recall import RECALL_TOOL, RecallStore
from optimizer.errors import ConfigError
from optimizer.world.chat import message_text, parse_tool_call, status_flags
from optimizer.world.tool import ToolCall, ToolOutput


def fingerprint(message: Mapping[str, Any], where: str) -> str:
    try:
        payload = json.dumps(message, sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(payload.encode()).hexdigest()
    except RecursionError:
        raise ConfigError(f"{where}: nested too deep for Python's JSON encoder") from None
    except UnicodeEncodeError as exc:  # a lone surrogate: no request body could carry it
        raise ConfigError(f"{where}: lone surrogate \\u{ord(exc.object[exc.start]):04x} (not valid Unicode)") from None


def plain_message(message: Any) -> Any:
    """A message (or tool call) as the dict the API sends: the openai SDK's objects are dumped, the rest kept."""
    if type(message) is dict:  # the common case, without a look-up
        return message
    dump = getattr(message, "model_dump", None)
    return dump(exclude_none=True) if callable(dump) else message


def leading_system(messages: Sequence[Any]) -> tuple[str | None, int]:
    """The system / developer messages before the first other message (joined), and how many there are."""
    texts: list[str] = []
    for index, message in enumerate(messages):
        message = plain_message(message)
        if not isinstance(message, Mapping) or message.get("role") not in ("system", "developer"):
            return ("\n\n".join(texts) if texts else None), index
        texts.append(message_text(message, f"message {index} ({message['role']})"))
    return ("\n\n".join(texts) if texts else None), len(messages)


@dataclass(frozen=True)
class UserMessage:
    """A user's turn: the task when the conversation has none yet."""

    text: str


@dataclass(frozen=True)
class AssistantMessage:
    """The assistant's reply: tool calls, or (with none) a final answer; `text` is what it wrote beside them."""

    text: str
    calls: tuple[ToolCall, ...]


@dataclass(frozen=True)
class ToolMessage:
    """The result of one earlier tool call, with the runtime status the message carries."""

    call: ToolCall
    content: str
    is_error: bool
    partial: bool
    must_keep: tuple[str, ...]

    def output(self, store: RecallStore) -> ToolOutput:
        if self.call.name != RECALL_TOOL:
            return ToolOutput(self.content, is_error=self.is_error, partial=self.partial, must_keep=self.must_keep)
        original = store.get(str(self.call.arguments.get("handle", "")))
        if original is None:  # the runtime's own tool: it knows the call failed
            return ToolOutput(self.content, is_error=True)
        return ToolOutput(self.content, must_keep=original.must_keep)


@dataclass
class SeenMessages:
    """The messages `compact` was given so far, and what they mapped to.

    How the earlier messages are checked at each call, so that a call costs what is new rather than the
    whole conversation. When the list handed in begins with the list the last call was handed, each message
    the same object or equal to it (a pointer per message to find out), they stand. Otherwise each earlier
    message that is not the very object seen at its position is compared in full with the copy made when it
    was first seen (and with its fingerprint when the copy differs). So a conversation whose earlier
    messages were replaced by other ones, removed or reordered is refused. Not detected: an earlier message
    edited in place (the same dict, its content changed after it was handed in), except the last message
    seen, which is compared in full at every call since an edit in place is likeliest there. Reading every
    earlier message at every call is what made a call cost the whole conversation.
    """

    fingerprints: list[str] = field(default_factory=list)
    system: str | None = None
    calls: dict[str, ToolCall] = field(default_factory=dict)
    answered: set[str] = field(default_factory=set)
    # An assistant's own text beside its tool calls (or its answer), shown again in native output.
    texts: dict[int, str] = field(default_factory=dict)
    # What this process holds of the messages seen, position by position (a restored state has fingerprints
    # only, until a call hands the messages in again): the caller's objects, held so that their identity
    # stays theirs, and copies of them as first seen.
    objects: list[Any] = field(default_factory=list)
    copies: list[Any] = field(default_factory=list)
    window: list[Any] = field(default_factory=list)  # the whole list the last call was handed, as it was

    def unseen(self, messages: Sequence[Any], offset: int) -> list[tuple[int, Any, Any, str]]:
        """The messages of `messages[offset:]` past those seen, all checked first: (position in `messages`,
        the message as handed in, as a dict, its fingerprint).

        A call whose earlier messages differ from those seen is refused: a conversation only grows.
        """
        self._check_unchanged(messages, offset)
        new = []
        for index in range(offset + len(self.fingerprints), len(messages)):
            plain = plain_message(messages[index])
            new.append((index, messages[index], plain, fingerprint(plain, f"message {index}")))
        return new

    def remember(self, message: Any, plain: Any, fingerprint_: str) -> None:
        """`message` (`plain` as a dict) was ingested: later calls must repeat it."""
        self.fingerprints.append(fingerprint_)
        self.objects.append(message)
        self.copies.append(copy.deepcopy(plain))

    def _check_unchanged(self, messages: Sequence[Any], offset: int) -> None:
        if not self._as_last_call(messages):
            self._check_each(messages, offset)
            self.window = list(messages)
        held = min(len(self.objects), len(messages) - offset)
        if held:
            self._compare(messages[offset + held - 1], held - 1, offset)

    def _as_last_call(self, messages: Sequence[Any]) -> bool:
        """Whether `messages` begins with the last call's messages, each the same object or equal to it."""
        window = self.window
        if not window or len(self.objects) < len(self.fingerprints) or len(messages) < len(window):
            return False
        # Two lists compare item by item, passing an item that is the same object in both without reading
        # it: comparing the caller's list with the last call's costs a pointer per message, not its content.
        window.extend(itertools.islice(messages, len(window), None))
        try:
            return window == (messages if isinstance(messages, list) else list(messages))
        except RecursionError:
            return False

    def _check_each(self, messages: Sequence[Any], offset: int) -> None:
        """Each earlier message, by identity with the object seen at its position, else compared in full."""
        count = len(messages) - offset
        held = min(len(self.objects), count)
        if not all(map(operator.is_, itertools.islice(messages, offset, offset + held), self.objects)):
            for index in range(held):
                if messages[offset + index] is not self.objects[index]:
                    self._compare(messages[offset + index], index, offset)
        for index in range(held, min(count, len(self.fingerprints))):  # known by fingerprint only (restored)
            plain = plain_message(messages[offset + index])
            if fingerprint(plain, f"message {index + offset}") != self.fingerprints[index]:
                _refuse_rewrite(index + offset)
            self.objects.append(messages[offset + index])
            self.copies.append(copy.deepcopy(plain))
        if count < len(self.fingerprints):
            _refuse_rewrite(len(messages))

    def _compare(self, message: Any, index: int, offset: int) -> None:
        """Refuse `message` unless it is the one seen at `index`; from now on its identity stands for it."""
        plain = plain_message(message)
        try:
            same = plain == self.copies[index]
        except RecursionError:  # nested too deep to compare: the fingerprint below says so in one line
            same = False
        # A copy that compares unequal may still be the same JSON (a tuple for a list): the fingerprint decides.
        if not same and fingerprint(plain, f"message {index + offset}") != self.fingerprints[index]:
            _refuse_rewrite(index + offset)
        self.objects[index] = message

    def read(self, message: Any, index: int, *, started: bool) -> UserMessage | AssistantMessage | ToolMessage:
        """One message as the step the runtime adds; `started`: the conversation has its task already.

        The tool calls an assistant message makes are remembered here, so a later tool message can name one.
        """
        if not isinstance(message, Mapping):
            raise ConfigError(f"message {index}: expected an object, not {type(message).__name__}")
        role = message.get("role")
        where = f"message {index} ({role})"
        if role in ("system", "developer"):
            raise ConfigError(f"{where}: a system message after the conversation started is not supported")
        if role != "user" and not started:
            raise ConfigError(f"{where}: comes before the first user message")
        if role == "user":
            if message.get("content") is None:  # read as "" it would become a task with no request
                raise ConfigError(f"{where}: 'content' is null; a user message needs its text")
            return UserMessage(message_text(message, where))
        if role == "assistant":
            return self._assistant(message, where)
        if role == "tool":
            return self._tool(message, where)
        raise ConfigError(f"{where}: unknown role {role!r} (system, user, assistant, tool)")

    def _assistant(self, message: Mapping[str, Any], where: str) -> AssistantMessage:
        if message.get("function_call"):
            raise ConfigError(f"{where}: legacy 'function_call' is not supported; send 'tool_calls'")
        text = message_text(message, where)
        tool_calls = message.get("tool_calls") or []
        if not isinstance(tool_calls, list):
            raise ConfigError(f"{where}: 'tool_calls' must be a list")
        return AssistantMessage(text, tuple(parse_tool_call(item, where, self.calls) for item in tool_calls))

    def _tool(self, message: Mapping[str, Any], where: str) -> ToolMessage:
        call_id = message.get("tool_call_id")
        call = self.calls.get(call_id) if isinstance(call_id, str) else None
        if call is None:
            raise ConfigError(f"{where}: tool_call_id {call_id!r} matches no earlier tool call")
        if call.id in self.answered:
            raise ConfigError(f"{where}: a second result for tool call {call.id!r}")
        content = message_text(message, where)
        flags = status_flags(message, where)
        must_keep = message.get("must_keep", [])
        if not isinstance(must_keep, list) or not all(isinstance(line, str) for line in must_keep):
            raise ConfigError(f"{where}: 'must_keep' must be a list of strings")
        return ToolMessage(call, content, flags["is_error"], flags["partial"], tuple(must_keep))


def _refuse_rewrite(index: int) -> None:
    raise ConfigError(
        f"message {index} differs from what this runtime already saw: a conversation can only grow "
        "(start a new runtime for another conversation)"
    )
