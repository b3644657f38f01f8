"""The one interface every context strategy implements.

A strategy is a pydantic model: its fields are its config, `type` selects it in the union. What it does
is a `RetentionPolicy` (pinned classes plus ordered write and history moves), so every strategy, fixed
baseline or learned guideline, runs through the same moves and is expressible as a guideline
(`as_guideline`). It sees the history and returns *records*: content written at write time, and edits to
replay. It never mutates the history itself (the loop appends what it returns), so every compression is
auditable.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC
from functools import cached_property
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from optimizer.context.history import Entry, History
from optimizer.context.moves.base import (
    CompressorTexts,
    Condensation,
    StrategyContext,
    Written,
    already_edited,
    clearable,
    latest_reads,
    replay_record,
    step_groups,
)
from optimizer.context.policy import RetentionPolicy
from optimizer.context.recall import RecallListing

if TYPE_CHECKING:
    from optimizer.context.guideline import Guideline


StrategyKind = Literal["baseline", "llm_baseline", "learned", "oracle"]


class ContextStrategy(BaseModel, ABC):
    """Base of all strategies. Defaults: no moves (write results verbatim, never condense)."""

    model_config = ConfigDict(extra="forbid", frozen=True, ignored_types=(cached_property,))

    type: str

    # What the registries need to know without building one: `baseline` (fixed, no model), `llm_baseline`
    # (fixed, calls the compressor), `learned` (a guideline), `oracle` (reads the task's reference solution:
    # tier 0 only, never exported or proposed).
    kind: ClassVar[StrategyKind] = "baseline"
    # An oracle whose question is the real agent's (what it does from content no real strategy could write): it
    # runs at tier 1 as well, as a ceiling, never as a row a strategy is chosen against.
    tier1_ceiling: ClassVar[bool] = False

    def policy(self) -> RetentionPolicy:
        """The moves this strategy applies."""
        return RetentionPolicy(pinned=())

    def texts(self) -> CompressorTexts | None:
        """The compressor instructions its LLM moves use (None: it has none)."""
        return None

    @cached_property
    def _policy(self) -> RetentionPolicy:
        return self.policy()

    def write(self, raw: Entry, history: History, ctx: StrategyContext) -> Written:
        """Checkpoint 1 → 2: what enters the history for a raw tool result."""
        return self._policy.apply_write(raw, history, ctx, self.texts())

    def condense(self, history: History, ctx: StrategyContext) -> Condensation | None:
        """Checkpoint 2 → 3: edits to replay before the next request (trigger and action)."""
        return self._policy.apply_condense(history, ctx, self.texts())

    def presend_budget(self) -> int | None:
        """Checkpoint 3 → 4: hard token budget for the replayed history, or None."""
        return self._policy.budget_tokens

    @property
    def offers_recall(self) -> bool:
        """Whether the agent gets the `recall` tool."""
        return self._policy.offers_recall

    @property
    def recall_tool(self) -> RecallListing:
        """When the agent is offered `recall`, if it is (see `RetentionPolicy.recall_tool`)."""
        return self._policy.recall_tool

    @property
    def uses_compressor(self) -> bool:
        return self._policy.uses_compressor

    def fixed(self) -> ContextStrategy:
        """This strategy with everything it reads from outside read now, so that every episode of a run uses
        the version the run is keyed by (a strategy reading a file would otherwise follow its edits)."""
        return self

    def version(self) -> str:
        """Content hash of what the strategy does: identical policies and texts compress identically."""
        texts = self.texts()
        payload = json.dumps(
            {
                "type": self.type,
                "policy": self._policy.model_dump(mode="json"),
                "texts": texts.version if texts else None,
            },
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:12]

    def label(self) -> str:
        return self.type

    def as_guideline(self, texts: Guideline) -> Guideline:
        """This strategy as a guideline file: its policy, with `texts`' instructions unless it has its own."""
        from optimizer.context.guideline import Guideline

        own = self.texts()
        return Guideline(
            name=self.type,
            description=f"The `{self.type}` baseline translated into a guideline.",
            policy=self.policy(),
            history=texts.history if own is None else own.history,
            observation=texts.observation if own is None else own.observation,
        )


__all__ = [
    "Condensation",
    "ContextStrategy",
    "StrategyContext",
    "Written",
    "already_edited",
    "clearable",
    "latest_reads",
    "replay_record",
    "step_groups",
]
