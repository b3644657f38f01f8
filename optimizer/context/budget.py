"""Checkpoint 3 → 4: the pre-send budget.

If the replayed history is still over budget, results are cut in the contract's budget order (static
first, error/partial last; skills and receipts never), oldest first, to recall placeholders. The
task, summaries, user turns and the latest step are never touched.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from optimizer.context.contract import contract_for
from optimizer.context.history import Entry, EntryKind, view_tokens
from optimizer.context.recall import RecallStore, placeholder
from optimizer.context.record import CompressionRecord
from optimizer.tokens import count_tokens


def apply_budget(
    view: Sequence[Entry], budget: int | None, store: RecallStore, *, step: int, strategy: str
) -> tuple[list[Entry], CompressionRecord | None]:
    out = list(view)
    if budget is None:
        return out, None
    total = view_tokens(out)
    if total <= budget:
        return out, None
    last_step = max((e.step for e in out if e.kind is EntryKind.ACTION), default=-1)
    candidates = [
        (contract_for(e.retention).budget_order, i)
        for i, e in enumerate(out)
        if e.kind is EntryKind.RESULT and e.step != last_step and contract_for(e.retention).budget_order is not None
    ]
    cut_ids: list[int] = []
    by_class: dict[str, int] = {}
    before = 0
    after = 0
    for _, index in sorted(candidates):
        if total <= budget:
            break
        entry = out[index]
        handle = store.put(entry)
        text = placeholder(entry, handle, reason="cut for budget", advertised=store.advertised)
        tokens = count_tokens(text)
        if tokens >= entry.tokens:
            continue
        out[index] = dataclasses.replace(entry, content=text, tokens=tokens)
        total -= entry.tokens - tokens
        before += entry.tokens
        after += tokens
        cut_ids.append(entry.id)
        key = str(entry.retention or "unknown")
        by_class[key] = by_class.get(key, 0) + entry.tokens - tokens
    if not cut_ids:
        return out, None
    record = CompressionRecord(
        strategy=strategy,
        stage="budget",
        step=step,
        action="truncate",
        entry_ids=tuple(cut_ids),
        tokens_before=before,
        tokens_after=after,
        dropped_by_class=by_class,
    )
    return out, record
