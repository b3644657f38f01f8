"""The summary search's two model calls, each cached by its exact request in acon's reply cache.

The summarizer: one call with the target's own message layout.
The targets send their assembled prompt as it is (LangChain: one user message holding the formatted
`summary_prompt`), not acon's compressor layout, so the call goes through `Compressor.request` with the
messages as given: the same reply cache, keyed by the request itself, and the same per-episode origin
accounting as acon's own compressor calls. The same instructions over the same history is never sent
twice, in a resumed job, a repeated one, or a screen followed by tier 0 on the same trajectory.

The optimizer: its UT and CO rewrites, cached the same way (keyed by prompt, temperature, the endpoint's
seed and the draw), so a resumed job replays the search it had made (the same rewrites, hence the same
candidates and the same stored runs) instead of drawing new ones, and a repeated job makes no optimizer call at
all. The n-th time a search asks the same prompt is draw n, a sample of its own: keyed by prompt alone, every
candidate of a round asked about the same lost facts got the first draw's reply back from the cache (a
validation run with 3 candidates and 2 rounds got one cached rewrite for four of its six proposals).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from optimizer.context.compressor import Compressor, CompressorOutput
from optimizer.llm.cache import ResponseCache, request_key
from optimizer.llm.client import ChatClient

LAYOUT = "target"


def call_summarizer(compressor: Compressor, messages: Sequence[Mapping[str, Any]], max_tokens: int) -> CompressorOutput:
    # Only whitespace is trimmed: the target would show the summary as the model wrote it (no marker stripping).
    return compressor.request(messages, max_tokens, layout=LAYOUT, clean=str.strip, what="summary")


@dataclass
class CachedOptimizer:
    """`(prompt, temperature) -> reply` on the optimizer endpoint; counts the calls it made and their tokens."""

    client: ChatClient
    cache: ResponseCache | None
    max_tokens: int
    calls: int = 0
    cache_hits: int = 0
    tokens: int = 0
    _asked: Counter[tuple[str, float]] = field(default_factory=Counter, repr=False)

    def __call__(self, prompt: str, temperature: float) -> str:
        messages = [{"role": "user", "content": prompt}]
        config = self.client.config
        draw = self._asked[(prompt, temperature)]
        self._asked[(prompt, temperature)] += 1
        # A seeded endpoint gives one sample per seed: each draw after the first moves the seed on.
        seed = config.seed + draw if config.seed is not None and draw else None
        key = request_key(
            {
                "messages": messages,
                "max_tokens": self.max_tokens,
                "temperature": temperature,
                "seed": config.seed,
                "layout": "summary-optimizer",
                **({"frequency_penalty": config.frequency_penalty} if config.frequency_penalty else {}),
                **({"draw": draw} if draw else {}),  # the first draw keeps the key it always had
            },
            endpoint=f"{config.base_url}|{self.client.model}",
        )
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self.cache_hits += 1
                return hit[0]
        # An empty reply is the rewrite's to refuse ("empty reply"), and never cached (the cache refuses it).
        completion = self.client.complete(
            messages, max_tokens=self.max_tokens, temperature=temperature, allow_empty=True, seed=seed
        )
        self.calls += 1
        self.tokens += completion.usage.total_tokens
        if self.cache is not None and completion.text.strip():
            self.cache.put(key, completion.text, completion.usage)
        return completion.text
