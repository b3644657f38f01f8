"""The typed parts of an episode record: history entries, tool calls, deviations, and the metrics.

Each is frozen and built complete by the loop (nothing is patched after it is filed). Texts are text
hashes into the episode's content-addressed store, never texts. Only `optimizer.evaluate.codec` turns
these into JSON and back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from optimizer.context.history import EntryKind
from optimizer.world.retention import RetentionClass
from optimizer.world.tool import ToolCall


@dataclass(frozen=True, slots=True)
class EntryRecord:
    """One history entry as written (checkpoint 2), with the raw text it came from (checkpoint 1)."""

    id: int
    kind: EntryKind
    step: int
    turn: int
    # The first step whose request could show this entry.
    visible_from: int
    text: str  # hash of the entry as written to the history
    raw: str  # hash of the text before write-time moves (the tool's output, the user's message)
    tokens: int
    retention: RetentionClass | None = None
    call: ToolCall | None = None  # the call a result answers
    calls: tuple[ToolCall, ...] = ()  # the calls an action made
    answer: str | None = None
    must_keep: tuple[str, ...] = ()
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One tool call the environment (or the recall store) ran, and what came back."""

    step: int
    turn: int
    name: str
    arguments: Mapping[str, Any]
    signature: str
    side_effect: bool
    is_error: bool
    retention: RetentionClass | None
    result_tokens: int
    # Offset from episode start, and duration. None in records from before calls were timed: their trace
    # spans share the gap after the model call that issued them.
    started_s: float | None = None
    latency_s: float | None = None


@dataclass(frozen=True, slots=True)
class DeviationRecord:
    """Where the context made the reference agent depart from the reference solution (tier 0 only)."""

    step: int
    reference_index: int  # the reference step it departed at
    kind: str  # the need's kind (value, receipt, ...)
    literal: str  # the literal the agent could not see
    behaviour: str  # guess | skip | repeat | recall (a near miss: the step went as written after a recall)
    source_class: str | None = None  # retention class of the content the literal first appeared in


@dataclass(frozen=True, slots=True)
class EpisodeMetrics:
    """ACON's per-episode figures plus cost, cache and retry counts (`compute_metrics` fills them).

    A closed set: every reader (scores, tables, the dataset, traces) names its fields. An episode that
    has not finished yet carries the zero record.
    """

    success: bool = False
    steps: int = 0
    peak_tokens: int = 0  # system prompt excluded, as ACON
    mean_input_tokens: float = 0.0
    dependency: float = 0.0
    agent_prompt_tokens: int = 0
    agent_completion_tokens: int = 0
    agent_cached_tokens: int = 0
    agent_tokens: int = 0
    compressor_tokens: int = 0
    compressor_calls: int = 0
    compressor_cache_hits: int = 0
    total_tokens: int = 0
    context_tokens: int = 0
    compressions: int = 0
    cache_breaks: int = 0
    invalidated_tokens: int = 0
    recall_calls: int = 0
    recalled_tokens: int = 0
    duplicate_writes: int = 0
    blocking: int = 0
    wall_s: float = 0.0
    model_s: float = 0.0
    # Model calls (agent and compressor) that needed retries, and the extra attempts they took.
    retried_calls: int = 0
    retries: int = 0
    token_source: str = "counted"
    cost: float = 0.0
    cost_uncached: float = 0.0
    # Needed facts (reference needs) checked when their step came, and how many the request then showed:
    # the data-flow layer, apart from whether an agent acted on them. Only an agent that follows a known
    # solution can say which facts a step needs, so tier 1 and runs recorded before format 6 carry None.
    facts_needed: int | None = None
    facts_visible: int | None = None
