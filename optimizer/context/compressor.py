"""The LLM compressor behind `llm_history`, `llm_observation` and `guideline`.

Prompts put the stable parts first (guideline, contract rules, task) and the variable data last, so
the server's KV cache reuses the prefix across calls. Replies are cached by exact request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from optimizer.context.contract import summary_rules
from optimizer.llm.cache import ResponseCache, request_key
from optimizer.llm.client import ChatClient
from optimizer.llm.usage import Usage
from optimizer.untrusted import UNTRUSTED_NOTICE, fence

SYSTEM = (
    "You compress the working context of an AI agent so it can finish its task with fewer tokens. "
    "You follow the compression guideline and the retention rules exactly. " + UNTRUSTED_NOTICE
)

_FENCE_RE = re.compile(r"^```[a-zA-Z]*\n(.*?)\n```$", re.DOTALL)
_MARKERS = ("# History Summary", "# Refined Observation", "## Refined Observation")


@dataclass(frozen=True)
class CompressorOutput:
    text: str
    usage: Usage
    cached: bool
    prompt: str = ""


class Compressor:
    def __init__(self, client: ChatClient, cache: ResponseCache | None = None) -> None:
        self.client = client
        self.cache = cache
        self.calls = 0
        self.cache_hits = 0

    def summarize_history(
        self, *, guideline: str, task: str, previous_summary: str | None, history: str, max_tokens: int
    ) -> CompressorOutput:
        parts = [
            f"# Compression guideline\n{guideline.strip()}",
            f"# Retention rules (always apply)\n{summary_rules()}",
            f"# The agent's task\n{fence(task, 'task')}",
        ]
        if previous_summary:
            parts.append(f"# Previous summary\n{fence(previous_summary, 'previous-summary')}")
        parts.append(f"# Interaction history to summarize\n{fence(history, 'history')}")
        parts.append("Write the new summary now, following the guideline. Output only the summary.")
        return self._run("\n\n".join(parts), max_tokens)

    def compress_observation(
        self, *, guideline: str, task: str, tool: str, observation: str, max_tokens: int
    ) -> CompressorOutput:
        # Only the task and the result itself: ACON found extra history hurt here, and a history-free
        # prompt makes identical results under identical guidelines hit the reply cache across runs.
        parts = [
            f"# Compression guideline\n{guideline.strip()}",
            f"# Retention rules (always apply)\n{summary_rules()}",
            f"# The agent's task\n{fence(task, 'task')}",
            f"# Tool result to compress (from `{tool}`)\n{fence(observation, 'tool-output')}",
            "Write the compressed tool result now, following the guideline. Output only the compressed result.",
        ]
        return self._run("\n\n".join(parts), max_tokens)

    def _run(self, prompt: str, max_tokens: int) -> CompressorOutput:
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}]
        key = request_key(
            {"messages": messages, "max_tokens": max_tokens, "temperature": self.client.config.temperature},
            endpoint=f"{self.client.base_url}|{self.client.model}",
        )
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self.cache_hits += 1
                return CompressorOutput(hit[0], hit[1], True, prompt)
        completion = self.client.complete(messages, max_tokens=max_tokens)
        self.calls += 1
        text = clean_reply(completion.text)
        if self.cache is not None:
            self.cache.put(key, text, completion.usage)
        return CompressorOutput(text, completion.usage, False, prompt)


def clean_reply(text: str) -> str:
    text = text.strip()
    for marker in _MARKERS:
        if marker in text:
            text = text.split(marker, 1)[1].strip()
    match = _FENCE_RE.match(text)
    return match.group(1).strip() if match else text
