"""`patch`: policy patches read straight off the provenance diffs. No model; every change cites the diff.

Class by class, each loss gets the cheapest remedy that undoes it: a class the contract requires pinned
is pinned; a loss at write time (checkpoint 2) takes the class out of the move that cut it, or (second
variant) offloads it behind a handle instead; a loss to an extraction or an offload keeps more of the
result (a longer preview, more head units); a summary loss clears the class to recall placeholders
instead; a clearing loss keeps the class; a budget loss raises the budget.
"""

from __future__ import annotations

from collections import Counter
from functools import partial
from typing import Literal

from optimizer.context.contract import CONTRACT, Action
from optimizer.context.moves import Clear, Extract, ExtractOld, Move, Offload, SummarizeOld, WriteMoveConfig
from optimizer.context.policy import RetentionPolicy
from optimizer.search.candidate import Proposal
from optimizer.search.proposers.base import ProposalInput, Proposer, derived, unique
from optimizer.search.proposers.edits import HISTORY_ORDER, WRITE_ORDER, classes_of, inserted, scaled, without
from optimizer.world.retention import RetentionClass

_CLEARING = ("clear", "mask", "drop")


class Patch(Proposer):
    """Undo, class by class, the losses the diffs attribute to the parent's policy."""

    type: Literal["patch"] = "patch"

    def propose(self, inputs: ProposalInput) -> list[Proposal]:
        parent = inputs.parent.guideline
        policy = parent.policy
        losses = Counter(
            (f.retention, f.checkpoint, (f.record or {}).get("action"))
            for pair in inputs.pairs
            for f in pair.diff.missing
            if f.retention and f.checkpoint
        )
        if not losses:
            return []
        out = []
        for write_remedy in ("keep", "offload"):
            pinned = set(policy.pinned)
            write, history, budget = policy.write, policy.history, policy.budget_tokens
            reasons: list[str] = []
            for (name, checkpoint, action), count in losses.most_common():
                retention = RetentionClass(name)
                where = f"{count} loss(es) of {retention.value} at checkpoint {checkpoint} ({action})"
                if retention in pinned:
                    continue
                if CONTRACT[retention].must_pin:
                    pinned.add(retention)
                    reasons.append(f"{where}: pin {retention.value} (the contract requires it)")
                elif checkpoint == 2 and action in ("extract", "offload"):
                    write, done = _keep_more(write, retention, action)
                    if done:
                        reasons.append(f"{where}: keep more of fresh {retention.value} results ({done})")
                elif checkpoint == 2:
                    lossy = [m for m in write if m.move == action and retention in classes_of(m)]
                    if not lossy:
                        continue
                    write = without(write, retention, partial(_matches, action))
                    if write_remedy == "offload":
                        offload = Offload(classes=(retention,), over=min(m.over for m in lossy))
                        write = inserted(write, offload, WRITE_ORDER)
                        reasons.append(f"{where}: offload fresh {retention.value} results with a handle")
                    else:
                        reasons.append(f"{where}: keep fresh {retention.value} results raw")
                elif checkpoint == 3 and action == "summarize":
                    summaries = [m for m in history if isinstance(m, SummarizeOld)]
                    history = without(history, retention, lambda m: isinstance(m, SummarizeOld))
                    cleared = any(isinstance(m, Clear) and retention in classes_of(m) for m in history)
                    if Action.CLEAR in CONTRACT[retention].allowed and not cleared:
                        keep_last = min((m.keep_last for m in summaries), default=1)
                        history = inserted(
                            history, Clear(classes=(retention,), trigger_tokens=0, keep_last=keep_last), HISTORY_ORDER
                        )
                    reasons.append(f"{where}: clear old {retention.value} to recall placeholders instead")
                elif checkpoint == 3 and action in (*_CLEARING, "extract"):
                    history = without(history, retention, partial(_matches, action))
                    reasons.append(f"{where}: keep old {retention.value} results")
                elif checkpoint == 4 and budget is not None:
                    budget = int(budget * 1.5)
                    reasons.append(f"{where}: raise the pre-send budget to {budget}")
            if not reasons:
                continue
            new = RetentionPolicy(
                **{
                    **dict(policy),  # what no remedy touches (batching, how recall is listed) stays the parent's
                    "pinned": tuple(c for c in RetentionClass if c in pinned),
                    "write": write,
                    "history": history,
                    "budget_tokens": budget,
                }
            )
            suffix = "patch" if write_remedy == "keep" else "patch-offload"
            out.append(Proposal(self.type, derived(parent, new, suffix), rationale="; ".join(reasons)))
        return unique(out, parent)


def _matches(action: str | None, move: Move) -> bool:
    """Whether `move` is the kind a loss names; an `extract` loss at checkpoint 3 was `extract_old`'s."""
    return move.move == action or (action == "extract" and isinstance(move, ExtractOld))


def _keep_more(
    write: tuple[WriteMoveConfig, ...], retention: RetentionClass, action: str
) -> tuple[tuple[WriteMoveConfig, ...], str]:
    """The write moves with the one of type `action` keeping more of `retention`'s results."""
    for move in write:
        if move.move != action or retention not in classes_of(move):
            continue
        new: WriteMoveConfig
        if isinstance(move, Extract):
            select = move.select
            looser = select.model_copy(
                update={
                    "min_words": max(1, select.min_words - 1),
                    "head": select.head + 2,
                    "top_ratio": round(select.top_ratio / 2, 2),
                    "max_term_share": min(1.0, round(select.max_term_share * 2, 2)),
                    "max_word_share": min(1.0, round(select.max_word_share * 2, 2)),
                }
            )
            new = move.model_copy(update={"select": looser})
            what = f"extract: min_words {select.min_words}->{looser.min_words}, head {select.head}->{looser.head}"
        elif isinstance(move, Offload):
            offload = move.model_copy(
                update={
                    "head_tokens": scaled(move.head_tokens, 1.6, 0) or 120,
                    "tail_tokens": scaled(move.tail_tokens, 1.6, 0) or 60,
                }
            )
            what = f"offload preview {move.head_tokens}/{move.tail_tokens}->{offload.head_tokens}/{offload.tail_tokens}"
            new = offload
        else:
            continue  # `compress` has nothing to keep more of
        if new != move:
            return tuple(new if m is move else m for m in write), what
    return write, ""
