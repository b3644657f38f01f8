"""The deterministic proposer: policy patches read straight off the provenance diffs, and tighter
variants for the CO step. No model; every change cites the diff that motivated it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from optimizer.context.contract import CONTRACT, Action
from optimizer.context.guideline import Guideline
from optimizer.context.moves import Clear, Compress, HistoryMove, Move, Offload, SummarizeOld, WriteMove
from optimizer.context.policy import RetentionPolicy
from optimizer.mining.provenance import PairDiff
from optimizer.search.candidate import Proposal
from optimizer.world.retention import RetentionClass

_CLEARING = ("clear", "mask", "drop", "offload")
# Below these a summary cannot hold the ids of a multi-step task, nor a compressed result its matching rows.
_MIN_SUMMARY_TOKENS = 96
_MIN_OBSERVATION_TOKENS = 64
_MIN_OVER = 128


def classes_of(move: Move) -> tuple[RetentionClass, ...]:
    """The classes a move touches: its own list, or every class the contract lets it touch."""
    if move.classes is not None:
        return move.classes
    return tuple(c for c in RetentionClass if move.applies_to(c, ()))


def without(moves: Sequence[Any], retention: RetentionClass, match: Callable[[Any], bool]) -> tuple[Any, ...]:
    """`moves` with `retention` taken out of each matching move (a move left with no class goes)."""
    out = []
    for move in moves:
        if match(move) and retention in classes_of(move):
            rest = tuple(c for c in classes_of(move) if c is not retention)
            if not rest:
                continue
            move = move.model_copy(update={"classes": rest})
        out.append(move)
    return tuple(out)


def patch_from_diffs(current: Guideline, diffs: Sequence[PairDiff]) -> list[Proposal]:
    """Candidates that undo, class by class, the losses the diffs attribute to this policy.

    Losses at write time (checkpoint 2) have two remedies with different costs, so both are proposed:
    take that class out of the move that cut it (history moves still shrink it once old), or offload
    it behind a recall handle instead. Losses in summaries (checkpoint 3) clear that class to recall
    placeholders instead; losses by clearing keep the class; losses to the budget raise it.
    """
    policy = current.policy
    losses = Counter(
        (f.retention, f.checkpoint, (f.record or {}).get("action"))
        for d in diffs for f in d.missing if f.retention and f.checkpoint
    )
    if not losses:
        return []
    variants = []
    for write_remedy in ("keep", "offload"):
        pinned = set(policy.pinned)
        write: tuple[WriteMove, ...] = policy.write
        history: tuple[HistoryMove, ...] = policy.history
        budget = policy.budget_tokens
        reasons: list[str] = []
        for (retention_name, checkpoint, action), count in losses.most_common():
            retention = RetentionClass(retention_name)
            where = f"{count} loss(es) of {retention.value} at checkpoint {checkpoint}"
            if retention in pinned:
                continue
            if CONTRACT[retention].must_pin:
                pinned.add(retention)
                reasons.append(f"{where}: pin {retention.value} (the contract requires it)")
            elif checkpoint == 2:
                lossy = [m for m in write if m.move == action and retention in classes_of(m)]
                if not lossy:
                    continue
                write = without(write, retention, lambda m, a=action: m.move == a)
                if write_remedy == "offload" and action != "offload":
                    over = min(m.over for m in lossy)
                    write = (*write, Offload(classes=(retention,), over=over))
                    reasons.append(f"{where} ({action}): offload fresh {retention.value} results with a handle")
                else:
                    reasons.append(f"{where} ({action}): keep fresh {retention.value} results raw")
            elif checkpoint == 3 and action == "summarize":
                summaries = [m for m in history if isinstance(m, SummarizeOld)]
                history = without(history, retention, lambda m: isinstance(m, SummarizeOld))
                cleared = any(isinstance(m, Clear) and retention in classes_of(m) for m in history)
                if Action.CLEAR in CONTRACT[retention].allowed and not cleared:
                    keep_last = min((m.keep_last for m in summaries), default=1)
                    history = (Clear(classes=(retention,), trigger_tokens=0, keep_last=keep_last), *history)
                reasons.append(f"{where} in summaries: clear old {retention.value} to recall placeholders")
            elif checkpoint == 3 and action in _CLEARING:
                history = without(history, retention, lambda m, a=action: m.move == a)
                reasons.append(f"{where} by {action}: keep old {retention.value}")
            elif checkpoint == 4 and budget is not None:
                budget = int(budget * 1.5)
                reasons.append(f"{where} by the pre-send budget: raise it to {budget}")
        if not reasons:
            continue
        new_policy = RetentionPolicy(
            pinned=tuple(c for c in RetentionClass if c in pinned), write=write, history=history,
            budget_tokens=budget,
        )
        suffix = "patch" if write_remedy == "keep" else "patch-offload"
        guideline = current.model_copy(update={"policy": new_policy, "name": f"{current.name.split('+')[0]}+{suffix}"})
        if guideline.version not in {v.guideline.version for v in variants}:
            variants.append(Proposal("patch", guideline, rationale="; ".join(reasons)))
    return variants


def _scaled(value: int, factor: float, floor: int) -> int:
    return max(floor, int(value * factor)) if value > floor else value


def tighten(current: Guideline) -> list[Proposal]:
    """CO-step variants that compress more: lower thresholds, shorter compressor outputs, fewer raw steps."""
    policy = current.policy
    out = []

    def variant(suffix: str, rationale: str, **changes: Any) -> None:
        changed = policy.model_copy(update=changes)
        if changed != policy:
            guideline = current.model_copy(update={"policy": changed, "name": f"{current.name}+{suffix}"})
            out.append(Proposal("tighten", guideline, rationale=rationale))

    def lower(move: Any) -> Any:
        if isinstance(move, Clear):
            return move.model_copy(update={"trigger_tokens": _scaled(move.trigger_tokens, 0.6, 256)})
        if hasattr(move, "over"):
            return move.model_copy(update={"over": _scaled(move.over, 0.6, _MIN_OVER)})
        return move

    def shorter(move: Any) -> Any:
        if isinstance(move, Compress):
            return move.model_copy(update={"max_tokens": _scaled(move.max_tokens, 0.6, _MIN_OBSERVATION_TOKENS)})
        if isinstance(move, SummarizeOld):
            return move.model_copy(update={"max_tokens": _scaled(move.max_tokens, 0.6, _MIN_SUMMARY_TOKENS)})
        if isinstance(move, Offload):
            return move.model_copy(update={"head_tokens": _scaled(move.head_tokens, 0.6, 16),
                                           "tail_tokens": _scaled(move.tail_tokens, 0.6, 0)})
        return move

    def fewer(move: Any) -> Any:
        keep_last = getattr(move, "keep_last", None)
        floor = 0 if isinstance(move, Clear) else 1
        if keep_last is None or keep_last <= floor:
            return move
        return move.model_copy(update={"keep_last": keep_last - 1})

    for suffix, change, what in (("lower", lower, "thresholds x0.6"), ("short", shorter, "output caps x0.6"),
                                 ("fewer", fewer, "one fewer raw step")):
        variant(suffix, what, write=tuple(change(m) for m in policy.write),
                history=tuple(change(m) for m in policy.history))
    return out
