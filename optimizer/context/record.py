"""Compression records: what a stage dropped or rewrote, and what it cost."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

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
    # The compressor's prompt and reply (texts here; the episode stores them as text hashes).
    compressor_io: tuple[str, str] | None = None
    # Set by the loop when it files the record: when the stage ran (seconds into the episode), how long.
    started_s: float | None = None
    latency_s: float | None = None
    # Filled by the loop once the request is built: did this step rewrite an already-sent prefix?
    breaks_cache: bool = False

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["compressor_usage"] = self.compressor_usage.to_dict() if self.compressor_usage else None
        data["entry_ids"] = list(self.entry_ids)
        data["handles"] = list(self.handles)
        data["dropped_by_class"] = dict(self.dropped_by_class)
        data["compressor_io"] = list(self.compressor_io) if self.compressor_io else None
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CompressionRecord:
        fields = dict(data)
        fields["entry_ids"] = tuple(fields.get("entry_ids", ()))
        fields["handles"] = tuple(fields.get("handles", ()))
        usage = fields.get("compressor_usage")
        fields["compressor_usage"] = Usage.from_dict(usage) if usage else None
        io = fields.get("compressor_io")
        fields["compressor_io"] = tuple(io) if io else None
        return cls(**fields)
