"""The CO step's deterministic analysis: what compressed outputs kept that the agent never used."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from optimizer.agent.episode import Episode

_IDENTIFIER = re.compile(r"\b(?:[A-Z][A-Z0-9]*-[A-Z0-9-]+|\d{3,}(?:\.\d+)?)\b")


def unused_content(episodes: Sequence[Episode]) -> str:
    """A short, literal-free report for the ShortenGuideline program."""
    summaries = 0
    summary_tokens = 0
    observations = 0
    observation_saved = 0
    kept_ids = 0
    unused_ids = 0
    kept_by_class: Counter[str] = Counter()
    for episode in episodes:
        used = set()
        for step in episode.steps:
            used.update(_IDENTIFIER.findall(str(step.action.get("calls", ""))))
            used.update(_IDENTIFIER.findall(str(step.action.get("answer") or "")))
        for record in episode.records:
            if record.action == "summarize":
                summaries += 1
                summary_tokens += record.tokens_after
            elif record.action == "compress":
                observations += 1
                observation_saved += record.tokens_before - record.tokens_after
        for step in episode.steps:
            for text_hash in step.replayed:
                text = episode.text(text_hash)
                ids = set(_IDENTIFIER.findall(text))
                kept_ids += len(ids)
                unused_ids += len(ids - used)
        for entry in episode.entries:
            if entry.kind == "result":
                kept_by_class[entry.retention or "unknown"] += entry.tokens
    lines = [f"{len(episodes)} compressed episodes that succeeded."]
    if summaries:
        lines.append(f"History summaries: {summaries}, averaging {summary_tokens // summaries} tokens each.")
    if observations:
        saved = observation_saved // observations
        lines.append(f"Compressed tool results: {observations}, saving {saved} tokens each.")
    if kept_ids:
        lines.append(
            f"Of the identifiers and numbers the agent was shown, {100 * unused_ids // kept_ids}% were never used "
            "in a later call or answer."
        )
    if kept_by_class:
        top = ", ".join(f"{cls} {tokens}" for cls, tokens in kept_by_class.most_common(4))
        lines.append(f"Tool-result tokens written to the history by class: {top}.")
    lines.append("Rows, fields and descriptions unrelated to the task were the bulk of what was never used.")
    return "\n".join(lines)
