"""Compression records: what a stage dropped or rewrote, and what it cost."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from optimizer.llm.usage import Usage

Stage = Literal["write", "replay", "budget"]


@dataclass(frozen=True)
class CompressionRecord:
    """One compression event. Content is never edited in place; this is the audit trail."""

    strategy: str
    stage: Stage
    step: int
    action: str  # summarize | mask | clear | offload | compress | truncate | drop
    entry_ids: tuple[int, ...]
    tokens_before: int
    tokens_after: int
    # Tokens removed per retention class (the class of the content that went, not of what replaced it).
    dropped_by_class: Mapping[str, int] = field(default_factory=dict)
    guideline_version: str | None = None
    handles: tuple[str, ...] = ()
    compressor_usage: Usage | None = None
    compressor_cached: bool = False
    # Extra attempts the compressor call needed (429, 5xx, timeouts, broken replies that were retried).
    compressor_retries: int = 0
    # The compressor's prompt and reply: texts as a stage returns it, text hashes once the episode files it.
    compressor_io: tuple[str, str] | None = None
    # Set by the loop when it files the record: when the stage ran (seconds into the episode), how long.
    started_s: float | None = None
    latency_s: float | None = None
    # Set by the loop when it files the record: did this step's request rewrite an already-sent prefix?
    breaks_cache: bool = False
