"""The candidate validator: the gate between a proposal and screening.

Rejects a candidate that breaks the retention contract (leaves `skill` or `write_receipt` unpinned),
exceeds the length cap, or carries text copied from tool output (an injected instruction the
optimizer LLM repeated is exactly that), in its instructions or anywhere in its policy (an extraction
rule is text too).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from optimizer.context.guideline import Guideline

SHINGLE_WORDS = 8
_WORDS = re.compile(r"[A-Za-z0-9_\-]+")


def shingles(text: str, n: int = SHINGLE_WORDS) -> set[tuple[str, ...]]:
    words = [w.lower() for w in _WORDS.findall(text)]
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


class ToolOutputIndex:
    """Word 8-grams of every tool output the optimizer was shown."""

    def __init__(self, outputs: Iterable[str] = ()) -> None:
        self._shingles: set[tuple[str, ...]] = set()
        for text in outputs:
            self.add(text)

    def add(self, text: str) -> None:
        self._shingles |= shingles(text)

    def copied(self, text: str, *, allowed: str = "") -> list[str]:
        """Phrases of `text` that also occur in tool output (ignoring those already in `allowed`)."""
        shared = (shingles(text) & self._shingles) - shingles(allowed)
        return sorted(" ".join(s) for s in shared)[:3]


def _text(guideline: Guideline) -> str:
    return "\n".join([guideline.history, guideline.observation, json.dumps(guideline.policy.model_dump(mode="json"))])


def validate(candidate: Guideline, parent: Guideline, outputs: ToolOutputIndex, *, max_chars: int) -> str | None:
    """None if the candidate may be screened, else the one-line reason it may not."""
    unpinned = candidate.policy.unpinned_required()
    if unpinned:
        return f"breaks the retention contract: {', '.join(c.value for c in unpinned)} must stay pinned"
    size = len(candidate.history) + len(candidate.observation)
    if size > max_chars:
        return f"too long: {size} characters of guideline text (cap {max_chars})"
    if not candidate.history.strip() or not candidate.observation.strip():
        return "empty compressor instruction"
    copied = outputs.copied(_text(candidate), allowed=_text(parent))
    if copied:
        return f"carries text copied from tool output: {copied[0]!r}"
    return None
