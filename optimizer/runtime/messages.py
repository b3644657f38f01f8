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
import json
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


def leading_system(messages: Sequence[Mapping[str, Any]]) -> tuple[str | None, list[Mapping[str, Any]]]:
    """The system / developer messages before the first other message (joined), and the rest."""
    texts: list[str] = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or message.get("role") not in ("system", "developer"):
            return ("\n\n".join(texts) if texts else None), list(messages[index:])
        texts.append(message_text(message, f"message {index} ({message['role']})"))
    return ("\n\n".join(texts) if texts else None), []


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
    """The messages `compact` was given so far, and what they mapped to."""

    fingerprints: list[str] = field(default_factory=list)
    system: str | None = None
    calls: dict[str, ToolCall] = field(default_factory=dict)
    answered: set[str] = field(default_factory=set)
    # An assistant's own text beside its tool calls (or its answer), shown again in native output.
    texts: dict[int, str] = field(default_factory=dict)
    # Copies of the messages seen, as far as this process has them (a restored state has fingerprints only):
    # comparing a message with its copy costs far less than fingerprinting it again at every call.
    copies: list[Any] = field(default_factory=list)

    def unseen(self, rest: Sequence[Any], offset: int) -> list[tuple[int, str]]:
        """The positions in `rest` past the messages seen, each with its fingerprint, all checked first.

        A call whose earlier messages differ from those seen is refused: a conversation only grows.
        """
        self._check_unchanged(rest, offset)
        new = range(len(self.fingerprints), len(rest))
        return [(index, fingerprint(rest[index], f"message {index + offset}")) for index in new]

    def remember(self, message: Any, fingerprint_: str) -> None:
        """`message` was ingested: later calls must repeat it."""
        self.fingerprints.append(fingerprint_)
        self.copies.append(copy.deepcopy(message))

    def _check_unchanged(self, rest: Sequence[Any], offset: int) -> None:
        kept = min(len(self.copies), len(rest))
        try:
            same = rest[:kept] == self.copies[:kept]
        except RecursionError:  # nested too deep to compare: the fingerprint below says so in one line
            same = False
        for index in range(kept if same else 0, min(len(rest), len(self.fingerprints))):
            # A copy that compares unequal may still be the same JSON (a tuple for a list): the fingerprint decides.
            if fingerprint(rest[index], f"message {index + offset}") != self.fingerprints[index]:
                _refuse_rewrite(index + offset)
            if index >= len(self.copies):
                self.copies.append(copy.deepcopy(rest[index]))
        if len(rest) < len(self.fingerprints):
            _refuse_rewrite(len(rest) + offset)

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
