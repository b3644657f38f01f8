"""One chat client for every OpenAI-compatible endpoint: bounded retries, usage on every call."""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

from optimizer import interrupts
from optimizer.errors import EndpointError, InfrastructureError
from optimizer.llm.endpoint import EndpointConfig
from optimizer.llm.gate import MAX_PAUSE_S, Gate, LocalGate, retry_after_s
from optimizer.llm.usage import Usage
from optimizer.tokens import count_message_tokens, count_tokens

if TYPE_CHECKING:
    import openai


@cache
def _retryable() -> tuple[type[Exception], ...]:
    import openai  # deferred: the SDK takes most of a second to import, and `acon --help` needs none of it

    return (
        openai.APITimeoutError,
        openai.APIConnectionError,
        openai.RateLimitError,
        openai.InternalServerError,
        openai.APIResponseValidationError,
    )


@dataclass(frozen=True)
class Completion:
    """A model reply plus everything needed to account for it."""

    text: str
    tool_calls: tuple[dict[str, Any], ...]
    usage: Usage
    finish_reason: str | None
    latency_s: float
    attempts: int
    request: Mapping[str, Any] = field(repr=False)


class ChatClient:
    """Sends chat requests to one endpoint. Thread-safe; at most `concurrency` requests in flight."""

    def __init__(self, config: EndpointConfig, *, base_url: str, model: str, gate: Gate | None = None) -> None:
        self.config = config
        self.base_url = base_url
        self.model = model
        import openai

        self._client = openai.OpenAI(
            base_url=base_url, api_key=config.api_key(), timeout=config.timeout_s, max_retries=0
        )
        # Shared by every caller of this endpoint (threads here; all workers under Ray, see `gate`).
        self.gate: Gate = gate or LocalGate(config.concurrency)
        self._system_tokens: dict[str, int] = {}
        self._system_lock = threading.Lock()

    @classmethod
    def from_sdk(cls, sdk: openai.OpenAI, model: str, config: EndpointConfig | None = None) -> ChatClient:
        """A client over the user's own `openai.OpenAI` (its base URL, key and HTTP settings)."""
        base_url = str(sdk.base_url).rstrip("/")
        config = config or EndpointConfig(base_url=base_url, model=model)
        client = cls(config, base_url=base_url, model=model)
        client._client = sdk.with_options(max_retries=0)  # retries are this client's, with its accounting
        return client

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        response_format: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        allow_empty: bool = False,
        seed: int | None = None,
    ) -> Completion:
        """One reply. A reply with neither text nor a tool call (a refusal, a reasoning model out of
        tokens) raises `InfrastructureError` unless `allow_empty`: no caller can use it, and taken as an
        answer or a compression it would be scored, and cached, as the model's work."""
        request = self._request(messages, tools, response_format, max_tokens, temperature)
        if seed is not None:  # one call's own sample on a seeded endpoint (the endpoint's seed otherwise)
            request["seed"] = seed

        import openai

        retryable = _retryable()
        attempt = 0
        while True:
            attempt += 1
            started = time.perf_counter()
            try:
                with self.gate.slot():
                    try:
                        # Abandoned at once on SIGTERM or Ctrl-C: a slow model's reply can take minutes.
                        response = interrupts.cancellable(lambda: self._client.chat.completions.create(**request))
                    except retryable as exc:
                        # Closed while this caller still holds its slot: once the slot frees, another caller
                        # (another thread, another Ray worker) could otherwise send inside the pause.
                        self._pause_if_asked(exc)
                        raise
                choice = response.choices[0]
            except retryable as exc:
                self._retry_or_raise(exc, attempt)
                continue
            except (IndexError, AttributeError, TypeError, json.JSONDecodeError) as exc:
                # A reply without choices or with a broken body: the server misbehaved, not the model.
                self._retry_or_raise(exc, attempt)
                continue
            except openai.AuthenticationError as exc:
                raise EndpointError(f"{self.base_url}: authentication failed ({exc.status_code})") from exc
            except openai.NotFoundError as exc:
                raise EndpointError(f"{self.base_url}: model {self.model!r} or route not found (404)") from exc
            except openai.APIStatusError as exc:
                if 500 <= exc.status_code < 600:
                    self._retry_or_raise(exc, attempt)
                    continue
                raise InfrastructureError(
                    f"{self.base_url}: request rejected with HTTP {exc.status_code}: {_short(exc)}",
                    kind=f"http_{exc.status_code}",
                    attempts=attempt,
                ) from exc
            latency = time.perf_counter() - started
            return self._completion(response, choice, request, latency, attempt, allow_empty=allow_empty)

    def _request(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        response_format: Mapping[str, Any] | None,
        max_tokens: int | None,
        temperature: float | None,
    ) -> dict[str, Any]:
        """The request body: the endpoint's settings, unless the call sets its own."""
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "temperature": self.config.temperature if temperature is None else temperature,
            "max_tokens": max_tokens or self.config.max_tokens,
        }
        request |= self.config.sampling()
        if tools:
            request["tools"] = [dict(t) for t in tools]
        if response_format is not None:
            request["response_format"] = dict(response_format)
        return request

    def _completion(
        self, response: Any, choice: Any, request: dict[str, Any], latency: float, attempt: int, *, allow_empty: bool
    ) -> Completion:
        """The reply as a `Completion`, refused when it holds neither text nor a tool call (see `complete`)."""
        message = choice.message
        text = message.content or ""
        tool_calls = tuple(_tool_call_dict(call) for call in (message.tool_calls or ()))
        if not allow_empty and not text.strip() and not tool_calls:
            raise InfrastructureError(
                f"{self.base_url}: empty reply from model {self.model!r} (finish_reason {choice.finish_reason})",
                kind="empty_reply",
                attempts=attempt,
            )
        return Completion(
            text=text,
            tool_calls=tool_calls,
            usage=_usage(response, request["messages"], text, tool_calls),
            finish_reason=choice.finish_reason,
            latency_s=latency,
            attempts=attempt,
            request=request,
        )

    def _retry_or_raise(self, exc: BaseException, attempt: int) -> None:
        if attempt > self.config.max_retries:
            kind = type(exc).__name__
            raise InfrastructureError(
                f"{self.base_url}: {kind} after {attempt} attempts: {_short(exc)}", kind=kind, attempts=attempt
            ) from exc
        asked = retry_after_s(exc)
        if asked is not None:
            # The server said when: every caller of the endpoint waits that long, then this one retries.
            # (A 429 closed the gate already, before its slot freed; pausing again only keeps the later end.)
            self.gate.pause(asked)
            interrupts.sleep(min(asked, MAX_PAUSE_S))
            return
        delay = self.config.backoff_s * (2 ** (attempt - 1))
        interrupts.sleep(delay * (0.5 + random.random()))

    def _pause_if_asked(self, exc: BaseException) -> None:
        asked = retry_after_s(exc)
        if asked is not None:
            self.gate.pause(asked)

    def system_tokens(self, system: str) -> int:
        """Server-side token count of a system prompt, from a one-token probe request (memoized).

        Peak tokens exclude the system prompt, as ACON does; the server's own count keeps them in the
        same units as its reported usage. The probe also warms the server's prefix cache.
        """
        with self._system_lock:
            if system in self._system_tokens:
                return self._system_tokens[system]
        completion = self.complete(
            [{"role": "system", "content": system}, {"role": "user", "content": "."}], max_tokens=1, allow_empty=True
        )
        tokens = completion.usage.prompt_tokens
        with self._system_lock:
            self._system_tokens[system] = tokens
        return tokens

    def probe(self) -> None:
        """Fail fast with a one-line `EndpointError` when the endpoint cannot answer at all."""
        try:
            self.complete([{"role": "user", "content": "Reply with OK."}], max_tokens=2, allow_empty=True)
        except InfrastructureError as exc:
            raise EndpointError(f"endpoint {self.base_url} is not answering: {exc}") from exc


def _short(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


def _tool_call_dict(call: Any) -> dict[str, Any]:
    return {"id": call.id, "name": call.function.name, "arguments": call.function.arguments}


def _usage(response: Any, messages: Sequence[Mapping[str, Any]], text: str, tool_calls: Sequence) -> Usage:
    reported = getattr(response, "usage", None)
    if reported is None or not reported.prompt_tokens:
        completion = count_tokens(text) + (count_tokens(json.dumps(list(tool_calls))) if tool_calls else 0)
        return Usage(count_message_tokens(messages), completion, 0, "counted")
    details = getattr(reported, "prompt_tokens_details", None)
    cached = (getattr(details, "cached_tokens", None) or 0) if details is not None else 0
    return Usage(reported.prompt_tokens, reported.completion_tokens or 0, cached, "reported")
