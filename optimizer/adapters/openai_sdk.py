"""The `openai` SDK adapter: a client whose `chat.completions.create` sends the compacted conversation.

```python
client = compacting(openai.OpenAI(...), ContextRuntime("guideline.md", retention={...}))
reply = client.chat.completions.create(model=..., messages=messages, tools=tools)   # as before
```

Everything else on the client (`models`, `embeddings`, `with_options`, ...) is the wrapped client's,
except that `responses.create` / `stream` / `parse` are refused in one line: the runtime compacts chat
messages, and a Responses call passed through would send the conversation uncompacted without a word
(for the Responses API's own compaction, `acon export --format openai`). One wrapped client serves one
conversation, since the runtime keeps that conversation's state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import openai

from optimizer.errors import ConfigError
from optimizer.runtime import ContextRuntime

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam


class _Completions:
    def __init__(self, client: openai.OpenAI, runtime: ContextRuntime) -> None:
        self._completions = client.chat.completions
        self._runtime = runtime

    def create(self, *, messages: Sequence[Any], tools: Sequence[Any] | None = None, **kwargs: Any) -> Any:
        """`chat.completions.create` with `messages` compacted and `recall` added to `tools` once it is offered."""
        # The compacted messages are plain dicts in the SDK's message shape, not its TypedDicts.
        compacted = cast("list[ChatCompletionMessageParam]", self._runtime.compact(messages))
        # After `compact`: its moves may have cleared the first result behind a handle, which offers `recall`.
        sent_tools = self._runtime.tools(tools)
        if sent_tools:
            kwargs["tools"] = sent_tools
        return self._completions.create(messages=compacted, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._completions, name)


class _Chat:
    def __init__(self, client: openai.OpenAI, runtime: ContextRuntime) -> None:
        self._chat = client.chat
        self.completions = _Completions(client, runtime)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._chat, name)


class _Responses:
    REFUSED = ("create", "stream", "parse")

    def __init__(self, client: openai.OpenAI) -> None:
        self._responses = client.responses

    def __getattr__(self, name: str) -> Any:
        if name in self.REFUSED:
            raise ConfigError(
                f"compacting() wraps chat.completions.create only; responses.{name} would send the conversation "
                "uncompacted (use chat.completions, or `acon export --format openai` for the Responses API's "
                "own compaction settings)"
            )
        return getattr(self._responses, name)


class CompactingOpenAI:
    """An `openai.OpenAI` client that applies `runtime` to every chat completion request."""

    def __init__(self, client: openai.OpenAI, runtime: ContextRuntime) -> None:
        self._client = client
        self.runtime = runtime
        self.chat = _Chat(client, runtime)
        self.responses = _Responses(client)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def compacting(client: openai.OpenAI, runtime: ContextRuntime) -> CompactingOpenAI:
    return CompactingOpenAI(client, runtime)
