"""The LLM compressor behind `llm_history`, `llm_observation` and `guideline`.

Prompts put the stable parts first (guideline, contract rules, task) and the variable data last, so
the server's KV cache reuses the prefix across calls. Replies are cached by exact request.
"""

from __future__ import annotations

import contextlib
import re
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from optimizer.context.contract import summary_rules
from optimizer.errors import InfrastructureError
from optimizer.llm.cache import ResponseCache, request_key
from optimizer.llm.client import ChatClient
from optimizer.llm.usage import Usage
from optimizer.tokens import count_tokens, truncate_to_tokens
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
    retries: int = 0  # extra attempts the call needed


# Room the fixed parts of a compressor prompt take (system, guideline, contract rules, task).
PROMPT_OVERHEAD_TOKENS = 2048


class Compressor:
    """Calls the compressor model; inputs longer than its context are compressed chunk by chunk."""

    def __init__(self, client: ChatClient, cache: ResponseCache | None = None) -> None:
        self.client = client
        self.cache = cache
        self.calls = 0
        self.cache_hits = 0
        self._local = threading.local()

    @contextlib.contextmanager
    def attempt(self, episode: str) -> Iterator[None]:
        """Attribute the calls made inside the block (on this thread) to one attempt of `episode`.

        A reply that an earlier attempt of the same episode fetched, but which never reached a stored
        episode (the job was killed, or the attempt ended in an infrastructure error and runs again), is
        reused from the cache yet accounted as this episode's own call, exactly as without the interruption.
        """
        self._local.origin = f"{episode}#{uuid.uuid4().hex}"
        try:
            yield
        finally:
            self._local.origin = None

    def _input_budget(self, max_tokens: int) -> int:
        return max(512, self.client.config.context_tokens - PROMPT_OVERHEAD_TOKENS - max_tokens)

    def summarize_history(
        self, *, guideline: str, task: str, previous_summary: str | None, history: str, max_tokens: int
    ) -> CompressorOutput:
        chunks = split_by_tokens(history, self._input_budget(max_tokens))
        outputs = []
        summary = previous_summary
        for chunk in chunks:  # a history longer than the context is folded in, chunk after chunk
            out = self._summarize_once(guideline, task, summary, chunk, max_tokens)
            outputs.append(out)
            summary = out.text
        return _combine(outputs, outputs[-1].text)

    def _summarize_once(
        self, guideline: str, task: str, previous_summary: str | None, history: str, max_tokens: int
    ) -> CompressorOutput:
        parts = [
            f"# Compression guideline\n{guideline.strip()}",
            f"# Retention rules (always apply)\n{summary_rules()}",
            f"# The agent's task\n{fence(task, 'task')}",
        ]
        if previous_summary:
            parts.append(f"# Previous summary\n{fence(previous_summary, 'previous-summary')}")
        parts.append(f"# Interaction history to summarize\n{fence(history, 'history')}")
        parts.append(
            f"Write the new summary now, following the guideline, {_length_limit(max_tokens)} Output only the summary."
        )
        return self._run("\n\n".join(parts), max_tokens)

    def compress_observation(
        self, *, guideline: str, task: str, tool: str, observation: str, max_tokens: int
    ) -> CompressorOutput:
        chunks = split_by_tokens(observation, self._input_budget(max_tokens))
        outputs = [
            self._compress_once(
                guideline, task, tool if len(chunks) == 1 else f"{tool}, part {i} of {len(chunks)}", chunk, max_tokens
            )
            for i, chunk in enumerate(chunks, 1)
        ]
        return _combine(outputs, "\n".join(o.text for o in outputs))

    def _compress_once(
        self, guideline: str, task: str, tool: str, observation: str, max_tokens: int
    ) -> CompressorOutput:
        # Only the task and the result itself: ACON found extra history hurt here, and a history-free
        # prompt makes identical results under identical guidelines hit the reply cache across runs.
        parts = [
            f"# Compression guideline\n{guideline.strip()}",
            f"# Retention rules (always apply)\n{summary_rules()}",
            f"# The agent's task\n{fence(task, 'task')}",
            f"# Tool result to compress (from `{tool}`)\n{fence(observation, 'tool-output')}",
            f"Write the compressed tool result now, following the guideline, {_length_limit(max_tokens)} "
            "Output only the compressed result.",
        ]
        return self._run("\n\n".join(parts), max_tokens)

    def _run(self, prompt: str, max_tokens: int) -> CompressorOutput:
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}]
        return self.request(messages, max_tokens, prompt=prompt)

    def request(
        self,
        messages: Sequence[Mapping[str, Any]],
        max_tokens: int,
        *,
        prompt: str = "",
        layout: str | None = None,
        clean: Callable[[str], str] | None = None,
        what: str = "compression",
    ) -> CompressorOutput:
        """One call with `messages` as given, cached by the exact request.

        acon's own prompts go through `_run`; a summarizer target sends its own assembled messages with a
        `layout` tag (part of the key, absent for acon's layout so its keys stay those of every stored cache)
        and its own reply `clean`-up (default: `clean_reply`). Both share the origin accounting of `attempt`.
        """
        request: dict[str, Any] = {
            "messages": list(messages),
            "max_tokens": max_tokens,
            "temperature": self.client.config.temperature,
            # A seed or penalty changes the reply; absent when unset, so keys stored before them still hit.
            **self.client.config.sampling(),
        }
        if layout is not None:
            request["layout"] = layout
        key = request_key(request, endpoint=f"{self.client.config.base_url}|{self.client.model}")  # "local", no port
        origin = getattr(self._local, "origin", None)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                text, usage, fetched_by = hit
                if (
                    origin is not None
                    and fetched_by is not None
                    and fetched_by != origin
                    and (fetched_by.rsplit("#", 1)[0] == origin.rsplit("#", 1)[0])
                ):
                    self.cache.claim(key, origin)  # an unfinished earlier attempt of this episode made the call
                    self.calls += 1
                    return CompressorOutput(text, usage, False, prompt)
                self.cache_hits += 1
                return CompressorOutput(text, usage, True, prompt)
        completion = self.client.complete(list(messages), max_tokens=max_tokens)
        self.calls += 1
        text = (clean or clean_reply)(completion.text)
        if not text:
            # Only a marker or an empty fence: a compression to nothing would drop the content unseen.
            raise InfrastructureError(
                f"{self.client.base_url}: empty {what} from model {self.client.model!r} "
                f"(reply {completion.text[:40]!r})",
                kind="empty_reply",
                attempts=completion.attempts,
            )
        if self.cache is not None:
            self.cache.put(key, text, completion.usage, origin)
        return CompressorOutput(text, completion.usage, False, prompt, completion.attempts - 1)


def _length_limit(max_tokens: int) -> str:
    # The model cannot see its completion cap: unprompted, small models write until they are cut off,
    # which costs the most decode time and loses the sections written last (DONE, TODO).
    return f"in at most {max(16, max_tokens * 3 // 5)} words; the reply is cut off after {max_tokens} tokens."


def _combine(outputs: list[CompressorOutput], text: str) -> CompressorOutput:
    if len(outputs) == 1:
        return outputs[0]
    usage = outputs[0].usage
    for out in outputs[1:]:
        usage = usage + out.usage
    # A chunked compression has no single (prompt, reply) pair to offer for distillation.
    return CompressorOutput(text, usage, all(o.cached for o in outputs), "", sum(o.retries for o in outputs))


def split_by_tokens(text: str, max_tokens: int) -> list[str]:
    """Line-aligned chunks of at most `max_tokens` each (a single overlong line is cut)."""
    if count_tokens(text) <= max_tokens:
        return [text]
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    for line in text.splitlines():
        tokens = count_tokens(line) + 1
        while tokens > max_tokens:  # one enormous line: cut it into pieces
            piece = truncate_to_tokens(line, max_tokens)
            if current:
                chunks.append("\n".join(current))
                current, size = [], 0
            chunks.append(piece)
            line = line[len(piece) :]
            tokens = count_tokens(line) + 1
        if size + tokens > max_tokens and current:
            chunks.append("\n".join(current))
            current, size = [], 0
        current.append(line)
        size += tokens
    if current:
        chunks.append("\n".join(current))
    return chunks


def clean_reply(text: str) -> str:
    text = text.strip()
    for marker in _MARKERS:
        if marker in text:
            text = text.split(marker, 1)[1].strip()
    match = _FENCE_RE.match(text)
    return match.group(1).strip() if match else text
