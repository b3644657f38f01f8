"""One summarizer call with the target's own message layout, cached by content.

The targets send their assembled prompt as it is (LangChain: one user message holding the formatted
`summary_prompt`), not acon's compressor layout, so the call goes to the compressor endpoint directly.
The key is the request itself: the same instructions over the same history is never sent twice, in a
resumed job, a repeated one, or a screen followed by tier 0 on the same trajectory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from optimizer.context.compressor import Compressor
from optimizer.errors import InfrastructureError
from optimizer.llm.cache import request_key
from optimizer.llm.usage import Usage


@dataclass(frozen=True)
class SummaryReply:
    text: str
    usage: Usage
    cached: bool
    retries: int = 0


def summary_key(compressor: Compressor, messages: Sequence[Mapping[str, Any]], max_tokens: int) -> str:
    config = compressor.client.config
    return request_key(
        {"messages": list(messages), "max_tokens": max_tokens, "temperature": config.temperature, "layout": "target"},
        endpoint=f"{config.base_url}|{compressor.client.model}",
    )


def call_summarizer(compressor: Compressor, messages: Sequence[Mapping[str, Any]], max_tokens: int) -> SummaryReply:
    key = summary_key(compressor, messages, max_tokens)
    if compressor.cache is not None:
        hit = compressor.cache.get(key)
        if hit is not None:
            compressor.cache_hits += 1
            return SummaryReply(hit[0], hit[1], True)
    completion = compressor.client.complete(list(messages), max_tokens=max_tokens)
    compressor.calls += 1
    text = completion.text.strip()
    if not text:
        # The target would show an empty summary in place of the history: an endpoint fault, never a result.
        raise InfrastructureError(
            f"{compressor.client.base_url}: empty summary from model {compressor.client.model!r}",
            kind="empty_reply",
            attempts=completion.attempts,
        )
    if compressor.cache is not None:
        compressor.cache.put(key, text, completion.usage)
    return SummaryReply(text, completion.usage, False, completion.attempts - 1)
