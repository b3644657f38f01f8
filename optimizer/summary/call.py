"""One summarizer call with the target's own message layout, cached by content.

The targets send their assembled prompt as it is (LangChain: one user message holding the formatted
`summary_prompt`), not acon's compressor layout, so the call goes through `Compressor.request` with the
messages as given: the same reply cache, keyed by the request itself, and the same per-episode origin
accounting as acon's own compressor calls. The same instructions over the same history is never sent
twice, in a resumed job, a repeated one, or a screen followed by tier 0 on the same trajectory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from optimizer.context.compressor import Compressor, CompressorOutput

LAYOUT = "target"


def call_summarizer(compressor: Compressor, messages: Sequence[Mapping[str, Any]], max_tokens: int) -> CompressorOutput:
    # Only whitespace is trimmed: the target would show the summary as the model wrote it (no marker stripping).
    return compressor.request(messages, max_tokens, layout=LAYOUT, clean=str.strip, what="summary")
