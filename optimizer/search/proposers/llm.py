"""The optimizer LLM: the session that runs the typed DSPy programs (`signatures`) and counts their tokens.

The work given to the model is what a small coder model does well: write RE2 patterns from examples of
the lines that held lost facts, and a one-sentence edit naming the class and field that was lost;
shorten instructions from a literal-free report of what went unused. A reply the model cannot format
is recorded as a failed proposal, never raised.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from optimizer.jsontypes import JSON

if TYPE_CHECKING:
    import dspy

    from optimizer.llm.client import ChatClient


def make_lm(client: ChatClient, *, temperature: float, seed: int) -> dspy.LM:
    """A DSPy LM on the same OpenAI-compatible endpoint as `client` (never the network)."""
    import dspy  # deferred, as `signatures` is: only a proposer that asks the model needs DSPy

    return dspy.LM(
        f"openai/{client.model}",
        api_base=client.base_url,
        api_key=client.config.api_key(),
        temperature=temperature,
        max_tokens=client.config.max_tokens,
        cache=False,
        num_retries=client.config.max_retries,
        seed=seed,
    )


class OptimizerLM:
    """Runs the programs against the optimizer endpoint and accounts for their tokens."""

    def __init__(self, client: ChatClient, *, seed: int) -> None:
        self.client = client
        self.seed = seed
        self.tokens = 0
        self.calls = 0

    def run(self, signature: type[dspy.Signature], *, temperature: float, seed: int, **inputs: str) -> dspy.Prediction:
        import dspy

        lm = make_lm(self.client, temperature=temperature, seed=seed)
        try:
            with dspy.context(lm=lm, adapter=dspy.ChatAdapter()):
                return dspy.Predict(signature)(**inputs)
        finally:
            for entry in lm.history:
                self.calls += 1
                usage = entry.get("usage") or {}
                self.tokens += int(usage.get("total_tokens") or 0)


def parse_json_list(text: object) -> list[JSON]:
    """The first JSON list in a model's reply (fences and prose around it tolerated); a reply DSPy already parsed
    into a list is that list."""
    if isinstance(text, list):
        return text
    raw = str(text)
    start, end = raw.find("["), raw.rfind("]")
    if start < 0 or end <= start:
        raise ValueError(f"no JSON list in the reply: {raw[:80]!r}")
    data: JSON = json.loads(raw[start : end + 1])
    if not isinstance(data, list):
        raise ValueError("the reply is not a JSON list")
    return data
