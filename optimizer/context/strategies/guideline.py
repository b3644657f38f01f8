"""`guideline`: the strategy the optimizer learns.

A guideline file drives everything: its policy says which classes are pinned, what happens to a
large fresh result of each class at write time (keep, compress, or offload to a recall handle) and
to old results once the history passes `t_hist` (keep, compress into the summary, or clear to a
recall placeholder), the thresholds and the pre-send budget; its body holds the history and
observation compressor texts.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from optimizer.context.contract import Action, contract_for, may
from optimizer.context.guideline import SEED_GUIDELINE, Guideline, guideline_at
from optimizer.context.history import Edit, Entry, EntryKind, History, Replace
from optimizer.context.recall import placeholder
from optimizer.context.record import CompressionRecord
from optimizer.context.strategies._llm import (
    compress_observation,
    current_summary,
    summarize,
    unsummarized_groups,
)
from optimizer.context.strategies.base import (
    Condensation,
    ContextStrategy,
    StrategyContext,
    Written,
    already_edited,
    clearable,
    latest_reads,
    replay_record,
)
from optimizer.tokens import count_tokens, truncate_to_tokens

OFFLOAD_PREVIEW_TOKENS = 120


class GuidelineStrategy(ContextStrategy):
    """Retention policy plus both LLM compressors, from one guideline."""

    type: Literal["guideline"] = "guideline"
    guideline: Guideline | str = Field(str(SEED_GUIDELINE), description="A guideline file path, or the guideline.")

    @field_validator("guideline")
    @classmethod
    def _load(cls, value: Guideline | str) -> Guideline | str:
        if isinstance(value, str):
            guideline_at(value)
        return value

    @property
    def spec(self) -> Guideline:
        return self.guideline if isinstance(self.guideline, Guideline) else guideline_at(self.guideline)

    @property
    def offers_recall(self) -> bool:
        return self.spec.policy.clears or self.spec.policy.budget_tokens is not None

    @property
    def uses_compressor(self) -> bool:
        return True

    def presend_budget(self) -> int | None:
        return self.spec.policy.budget_tokens

    def version(self) -> str:
        return self.spec.version

    def label(self) -> str:
        return f"guideline:{self.spec.name}@{self.spec.version}"

    def write(self, raw: Entry, history: History, ctx: StrategyContext) -> Written:
        spec = self.spec
        policy = spec.policy
        if raw.tokens <= policy.t_obs or not contract_for(raw.retention).write_time_cut:
            return Written(raw.content)
        action = policy.fresh_action(raw.retention)
        if action is Action.COMPRESS:
            return compress_observation(
                raw, history, ctx, guideline=spec.observation, max_tokens=policy.observation_max_tokens,
                strategy=self.type, version=spec.version,
            )
        if action is Action.CLEAR:
            handle = ctx.store.put(raw)
            preview = truncate_to_tokens(raw.content, OFFLOAD_PREVIEW_TOKENS)
            content = placeholder(raw, handle, reason="offloaded", preview=preview)
            after = count_tokens(content)
            record = CompressionRecord(
                strategy=self.type, stage="write", step=ctx.step, action="offload", entry_ids=(raw.id,),
                tokens_before=raw.tokens, tokens_after=after,
                dropped_by_class={str(raw.retention or "unknown"): max(0, raw.tokens - after)},
                guideline_version=spec.version, handles=(handle,),
            )
            return Written(content, record)
        return Written(raw.content)

    def condense(self, history: History, ctx: StrategyContext) -> Condensation | None:
        spec = self.spec
        policy = spec.policy
        latest = latest_reads(history.entries)
        done = already_edited(history)
        to_summary: list[Entry] = []
        to_clear: list[Entry] = []
        for group in unsummarized_groups(history, policy.keep_last_k):
            results = [e for e in group if e.kind is EntryKind.RESULT]
            actions = {e.id: self._old_action(e, latest) for e in results}
            if all(a is Action.COMPRESS for a in actions.values()):
                to_summary.extend(group)  # the call goes with its results: never split
                continue
            # Already-cleared results are placeholders now: their written size must not count again.
            to_clear.extend(e for e in results if actions[e.id] is Action.CLEAR and e.id not in done)
        pending = sum(e.tokens for e in to_summary) + sum(e.tokens for e in to_clear)
        previous = current_summary(history) or ""
        if not (to_summary or to_clear) or count_tokens(previous) + pending <= policy.t_hist:
            return None
        clear_edits: list[Edit] = []
        handles: list[str] = []
        for entry in to_clear:
            handle = ctx.store.put(entry)
            handles.append(handle)
            clear_edits.append(Replace(entry.id, placeholder(entry, handle)))
        if not to_summary:
            record = replay_record(
                self.type, "clear", history, clear_edits, ctx, guideline_version=spec.version, handles=tuple(handles)
            )
            return Condensation(tuple(clear_edits), (record,))
        condensation = summarize(
            history, ctx, to_summary, guideline=spec.history, max_tokens=policy.summary_max_tokens,
            strategy=self.type, version=spec.version, extra_edits=clear_edits,
        )
        if handles:
            record = condensation.records[0]
            from dataclasses import replace

            condensation = Condensation(condensation.edits, (replace(record, handles=tuple(handles)),))
        return condensation

    def _old_action(self, entry: Entry, latest: frozenset[int]) -> Action:
        action = self.spec.policy.old_action(entry.retention)
        if action is Action.CLEAR and not clearable(entry, latest_ids=latest):
            return Action.KEEP
        if action is Action.COMPRESS and not may(entry.retention, Action.COMPRESS):
            return Action.KEEP
        return action
