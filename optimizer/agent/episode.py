"""The episode record: everything that happened in one run of one task under one strategy.

Texts are stored once, content-addressed; each checkpoint of each step is a list of text hashes, written
as a delta against the previous step's list (histories grow at the end), so a 200-step episode's record
grows with its distinct texts and new entries, not with steps x context. `locate()` answers "at which
checkpoint and step did this literal disappear?".
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from optimizer.agent.episode_records import DeviationRecord, EntryRecord, EpisodeMetrics, ToolCallRecord
from optimizer.context.record import CompressionRecord
from optimizer.llm.usage import Usage, total_usage
from optimizer.world.needs import occurs

Outcome = Literal["success", "failure", "infra_error"]
CHECKPOINTS = {
    1: "raw tool result",
    2: "history as written",
    3: "history as replayed",
    4: "after the pre-send budget",
    5: "final request sent",
}


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass
class StepRecord:
    step: int
    turn: int
    # Checkpoints 3-5 of this step, as text hashes (5 = the messages as sent, system first).
    replayed: list[str]
    budgeted: list[str]
    request: list[dict[str, str]]  # {"role", "text": hash}
    input_tokens: int  # agent input for this step, system prompt excluded
    action: dict[str, Any]
    usage: dict[str, Any] | None = None
    latency_s: float = 0.0
    attempts: int = 1
    cache_break: bool = False
    invalidated_tokens: int = 0
    started_s: float = 0.0  # offset from episode start, for traces


@dataclass
class Episode:
    task_id: str
    suite: str
    strategy: str
    strategy_version: str
    agent: str
    outcome: Outcome
    reasons: list[str] = field(default_factory=list)
    blocking: list[str] = field(default_factory=list)
    error: str | None = None
    answers: list[str | None] = field(default_factory=list)
    steps: list[StepRecord] = field(default_factory=list)
    entries: list[EntryRecord] = field(default_factory=list)  # checkpoint 2 (+ raw hash for checkpoint 1)
    # As filed by the loop: `compressor_io` holds text hashes, and the timing and `breaks_cache` are set.
    records: list[CompressionRecord] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)
    deviations: list[DeviationRecord] = field(default_factory=list)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    system_prompt_tokens: int = 0
    token_source: str = "counted"
    wall_s: float = 0.0
    metrics: EpisodeMetrics = field(default_factory=EpisodeMetrics)
    # text -> its key, so a text seen at every step is hashed once (a str caches its own hash).
    _keys: dict[str, str] = field(default_factory=dict, init=False, repr=False, compare=False)

    def store(self, text: str) -> str:
        key = self._keys.get(text)
        if key is None:
            key = text_hash(text)
            self.texts.setdefault(key, text)
            self._keys[text] = key
        return key

    def text(self, key: str) -> str:
        return self.texts[key]

    @property
    def success(self) -> bool:
        return self.outcome == "success"

    def checkpoint_texts(self, checkpoint: int, step_index: int) -> list[str]:
        """The texts present at a checkpoint for one step (1 and 2: results written up to that step)."""
        step = self.steps[step_index]
        if checkpoint == 1:
            return [self.text(e.raw) for e in self.entries if e.kind == "result" and e.visible_from <= step.step]
        if checkpoint == 2:
            return [self.text(e.text) for e in self.entries if e.visible_from <= step.step]
        if checkpoint == 3:
            return [self.text(h) for h in step.replayed]
        if checkpoint == 4:
            return [self.text(h) for h in step.budgeted]
        return [self.text(m["text"]) for m in step.request if m["role"] != "system"]

    def locate(self, literal: str) -> list[dict[str, Any]]:
        """Per step, which checkpoints show `literal`: the first False after a True is where it vanished."""
        out = []
        for index, step in enumerate(self.steps):
            seen = {c: any(occurs(literal, t) for t in self.checkpoint_texts(c, index)) for c in CHECKPOINTS}
            out.append({"step": step.step, "checkpoints": seen})
        return out

    def lost_at(self, literal: str, step_index: int) -> int | None:
        """The first checkpoint (1-5) at which `literal` is missing at a step, after being present earlier."""
        previous = True
        for checkpoint in CHECKPOINTS:
            present = any(occurs(literal, t) for t in self.checkpoint_texts(checkpoint, step_index))
            if previous and not present:
                return checkpoint if checkpoint > 1 else None
            previous = present
        return None


def compute_metrics(
    episode: Episode,
    *,
    agent_pricing=None,
    compressor_pricing=None,
    visibility: tuple[int, int] | None = None,
) -> EpisodeMetrics:
    """ACON's metrics plus cache-aware cost. Peak and dependency exclude the system prompt, as ACON."""
    inputs = [s.input_tokens for s in episode.steps]
    agent_usages = [Usage.from_dict(s.usage) for s in episode.steps if s.usage]
    outputs = [Usage.from_dict(s.usage).completion_tokens if s.usage else 0 for s in episode.steps]
    dependency = sum((n_in + 2 * n_out) * n_out / 2 for n_in, n_out in zip(inputs, outputs, strict=True))
    records = episode.records
    compressor_usages = [r.compressor_usage for r in records if r.compressor_usage]
    agent_total = total_usage(agent_usages)
    compressor_total = total_usage(compressor_usages)
    recalls = [c for c in episode.tool_calls if c.name == "recall"]
    writes = [c for c in episode.tool_calls if c.side_effect and not c.is_error]
    signatures = [c.signature for c in writes]
    cost = cost_uncached = 0.0
    if agent_pricing is not None:
        cost += agent_pricing.cost(agent_total)
        cost_uncached += agent_pricing.cost(agent_total, cache_aware=False)
    if compressor_pricing is not None:
        cost += compressor_pricing.cost(compressor_total)
        cost_uncached += compressor_pricing.cost(compressor_total, cache_aware=False)
    return EpisodeMetrics(
        success=episode.success,
        steps=len(episode.steps),
        peak_tokens=max(inputs, default=0),
        mean_input_tokens=(sum(inputs) / len(inputs)) if inputs else 0.0,
        dependency=dependency,
        agent_prompt_tokens=agent_total.prompt_tokens,
        agent_completion_tokens=agent_total.completion_tokens,
        agent_cached_tokens=agent_total.cached_tokens,
        agent_tokens=agent_total.total_tokens,
        compressor_tokens=compressor_total.total_tokens,
        compressor_calls=len(compressor_usages),
        compressor_cache_hits=sum(1 for r in records if r.compressor_cached),
        total_tokens=agent_total.total_tokens + compressor_total.total_tokens,
        context_tokens=sum(inputs),
        compressions=len(records),
        cache_breaks=sum(1 for s in episode.steps if s.cache_break),
        invalidated_tokens=sum(s.invalidated_tokens for s in episode.steps),
        recall_calls=len(recalls),
        recalled_tokens=sum(c.result_tokens for c in recalls if not c.is_error),
        duplicate_writes=len(signatures) - len(set(signatures)),
        blocking=len(episode.blocking),
        wall_s=episode.wall_s,
        model_s=sum(s.latency_s for s in episode.steps),
        retried_calls=sum(1 for s in episode.steps if s.attempts > 1)
        + sum(1 for r in records if r.compressor_retries > 0),
        retries=sum(max(0, s.attempts - 1) for s in episode.steps) + sum(r.compressor_retries for r in records),
        token_source=episode.token_source,
        cost=cost,
        cost_uncached=cost_uncached,
        facts_needed=visibility[0] if visibility else None,
        facts_visible=visibility[1] if visibility else None,
    )


class Scored(Protocol):
    """What the run-level figures read of an episode: an `Episode`, or a run's summary of one."""

    @property
    def outcome(self) -> Outcome: ...
    @property
    def success(self) -> bool: ...
    @property
    def metrics(self) -> EpisodeMetrics: ...
    @property
    def wall_s(self) -> float: ...


def summarize_episodes(episodes: Iterable[Scored]) -> dict[str, Any]:
    """Run-level figures over scored episodes; infrastructure errors are counted, never scored."""
    episodes = list(episodes)
    scored = [e for e in episodes if e.outcome != "infra_error"]
    successes = [e for e in scored if e.success]
    peaks = [e.metrics.peak_tokens for e in scored]

    def mean(values: Iterable[float]) -> float:
        return sum(values) / len(scored) if scored else 0.0

    total_cost = sum(e.metrics.cost for e in scored)
    total_cost_uncached = sum(e.metrics.cost_uncached for e in scored)
    return {
        "tasks": len(episodes),
        "scored": len(scored),
        "infra_errors": len(episodes) - len(scored),
        "successes": len(successes),
        "success": len(successes) / len(scored) if scored else 0.0,
        "peak_tokens_mean": mean(e.metrics.peak_tokens for e in scored),
        "peak_tokens_max": max(peaks, default=0),
        "dependency_mean": mean(e.metrics.dependency for e in scored),
        "steps_mean": mean(e.metrics.steps for e in scored),
        "agent_tokens": sum(e.metrics.agent_tokens for e in scored),
        "compressor_tokens": sum(e.metrics.compressor_tokens for e in scored),
        "compressor_calls": sum(e.metrics.compressor_calls for e in scored),
        "total_tokens": sum(e.metrics.total_tokens for e in scored),
        "cost": total_cost,
        "cost_per_success": total_cost / len(successes) if successes else None,
        "cost_per_success_uncached": total_cost_uncached / len(successes) if successes else None,
        "cache_breaks": sum(e.metrics.cache_breaks for e in scored),
        "recall_calls": sum(e.metrics.recall_calls for e in scored),
        "duplicate_writes": sum(e.metrics.duplicate_writes for e in scored),
        "blocking": sum(e.metrics.blocking for e in scored),
        "retries": sum(e.metrics.retries for e in episodes),
        "wall_s": sum(e.wall_s for e in episodes),
    }
