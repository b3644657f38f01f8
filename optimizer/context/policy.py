"""The retention policy: pinned classes, an ordered list of write moves, an ordered list of history moves,
and the pre-send budget. One policy format drives every strategy, from `none` (no moves) to a learned
guideline; each fixed baseline is a policy of one or two moves (see each strategy's `policy()`).

Write moves run in order on a fresh result, each on what the previous left, when the result's class is
one the move applies to and the current text is longer than the move's `over`. History moves run in
order before each request, each seeing the edits of the ones before it. The retention contract bounds
every move (`optimizer.context.contract`); pinned classes are never touched by any move.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from optimizer.context.contract import CONTRACT
from optimizer.context.history import Edit, Entry, History
from optimizer.context.moves import (
    CompressorTexts,
    Condensation,
    HistoryMoveConfig,
    StrategyContext,
    WriteMoveConfig,
    Written,
)
from optimizer.context.recall import RecallListing
from optimizer.context.record import CompressionRecord
from optimizer.tokens import count_tokens
from optimizer.world.retention import RetentionClass

_FORMAT_1_KEYS = ("fresh", "old", "t_hist", "t_obs", "keep_last_k", "summary_max_tokens", "observation_max_tokens")


class RetentionPolicy(BaseModel):
    """Structured part of a guideline: which classes are pinned, and the moves applied to the rest."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pinned: tuple[RetentionClass, ...] = Field(
        (RetentionClass.SKILL, RetentionClass.WRITE_RECEIPT),
        description="Classes kept verbatim outside any summary, never cut, cleared or compressed.",
    )
    write: tuple[WriteMoveConfig, ...] = Field((), description="Write-time moves, applied in order.")
    history: tuple[HistoryMoveConfig, ...] = Field((), description="History-time moves, applied in order.")
    budget_tokens: int | None = Field(None, gt=0, description="Hard pre-send budget for the history, if any.")
    batch_tokens: int = Field(
        0,
        ge=0,
        description="Apply the model-free history moves of a step only when together they free at least this "
        "many tokens: every edit rebuilds the cached prefix, so batching them keeps cache breaks rare (in the "
        "spirit of `clear_at_least` and SWE-agent's polling). A step whose moves called the compressor keeps "
        "their edits, since the call is paid for. 0: every edit applies.",
    )

    recall_tool: RecallListing = Field(
        "once_cleared",
        description="When the agent is offered `recall` (if a move clears recoverably): `once_cleared`, from the "
        "first request that shows a handle; `always`, from the first request; `never`, not at all (placeholders "
        "then carry no handle).",
    )

    @model_serializer(mode="wrap")
    def _omit_defaults_added_later(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # At their defaults, knobs added after the format was fixed are left out, so every guideline written before
        # them keeps its file and content hash. (A run of a guideline that lists `recall` only once cleared is keyed
        # apart from runs recorded before, which listed it from the start: `strategy_runs._recall_listing`.)
        data: dict[str, Any] = handler(self)
        if self.batch_tokens == 0:
            data.pop("batch_tokens", None)
        if self.recall_tool == "once_cleared":
            data.pop("recall_tool", None)
        return data

    @model_validator(mode="before")
    @classmethod
    def _no_format_1(cls, data: Any) -> Any:
        if isinstance(data, dict):
            old = [k for k in _FORMAT_1_KEYS if k in data]
            if old:
                raise ValueError(
                    f"format-1 policy keys ({', '.join(old)}): a policy is now `write` and `history` lists of "
                    "moves (see guidelines/seed/seed.md)"
                )
        return data

    @property
    def moves(self) -> tuple[Any, ...]:
        return (*self.write, *self.history)

    @property
    def offers_recall(self) -> bool:
        """Whether the agent gets the `recall` tool at some point: a move keeps what it cuts retrievable, and the
        guideline does not withhold the tool (`recall_tool: never`)."""
        if self.recall_tool == "never":
            return False
        return self.budget_tokens is not None or any(m.offers_recall for m in self.moves)

    @property
    def uses_compressor(self) -> bool:
        return any(m.uses_compressor for m in self.moves)

    def unpinned_required(self) -> list[RetentionClass]:
        """Classes the contract requires pinned that this policy leaves unpinned."""
        return [c for c, rule in CONTRACT.items() if rule.must_pin and c not in self.pinned]

    def apply_write(self, raw: Entry, history: History, ctx: StrategyContext, texts: CompressorTexts | None) -> Written:
        """Checkpoint 1 → 2 for one tool result."""
        content, tokens = raw.content, raw.tokens
        records: list[CompressionRecord] = []
        for move in self.write:
            if tokens <= move.over or not move.applies_to(raw.retention, self.pinned):
                continue
            written = move.write(raw, content, history, ctx, texts)
            if written is None:
                continue
            content = written.content
            tokens = written.records[-1].tokens_after if written.records else count_tokens(content)
            records.extend(written.records)
        return Written(content, tuple(records))

    def apply_condense(
        self, history: History, ctx: StrategyContext, texts: CompressorTexts | None
    ) -> Condensation | None:
        """Checkpoint 2 → 3: every history move's edits, each move seeing the edits before it."""
        edits: list[Edit] = []
        records: list[CompressionRecord] = []
        view = history
        for move in self.history:
            condensation = move.condense(view, ctx, texts, self.pinned)
            if condensation is None:
                continue
            edits.extend(condensation.edits)
            records.extend(condensation.records)
            view = history.with_edits(edits)
        if not edits:
            return None
        freed = sum(r.tokens_before - r.tokens_after for r in records)
        if freed < self.batch_tokens and not any(r.compressor_usage is not None for r in records):
            return None  # too little goes to pay for a rebuilt prefix: wait until more can go at once
        return Condensation(tuple(edits), tuple(records))
