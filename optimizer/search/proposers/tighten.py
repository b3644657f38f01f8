"""`tighten`: CO-step variants that cut more, one knob each. No model; each names the knob it turned.

Lower thresholds (`over`, clear triggers), shorter outputs (compressor caps, offload previews), fewer raw
recent steps, stricter extraction (more of the request's words to count as a mention, fewer head units),
extraction that ignores terms common to many of a result's units.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

from optimizer.context.moves import Clear, Compress, Extract, ExtractOld, Offload, SummarizeOld
from optimizer.search.candidate import Proposal
from optimizer.search.proposers.base import ProposalInput, Proposer, derived, unique
from optimizer.search.proposers.edits import scaled

# Below these a summary cannot hold the ids of a multi-step task, nor a compressed result its matching rows.
MIN_SUMMARY_TOKENS = 96
MIN_OBSERVATION_TOKENS = 64
MIN_OVER = 128
# A term in a tenth of a result's units still tells them apart; below that, extraction keeps only rule lines.
MIN_TERM_SHARE = 0.1


def _lower(move: Any) -> Any:
    if isinstance(move, Clear):
        return move.model_copy(update={"trigger_tokens": scaled(move.trigger_tokens, 0.6, 256)})
    if hasattr(move, "over"):
        return move.model_copy(update={"over": scaled(move.over, 0.6, MIN_OVER)})
    return move


def _shorter(move: Any) -> Any:
    if isinstance(move, Compress):
        return move.model_copy(update={"max_tokens": scaled(move.max_tokens, 0.6, MIN_OBSERVATION_TOKENS)})
    if isinstance(move, SummarizeOld):
        return move.model_copy(update={"max_tokens": scaled(move.max_tokens, 0.6, MIN_SUMMARY_TOKENS)})
    if isinstance(move, Offload):
        return move.model_copy(
            update={"head_tokens": scaled(move.head_tokens, 0.6, 16), "tail_tokens": scaled(move.tail_tokens, 0.6, 0)}
        )
    return move


def _fewer(move: Any) -> Any:
    keep_last = getattr(move, "keep_last", None)
    floor = 0 if isinstance(move, Clear) else 1
    if keep_last is None or keep_last <= floor:
        return move
    return move.model_copy(update={"keep_last": keep_last - 1})


def _stricter(move: Any) -> Any:
    if not isinstance(move, Extract | ExtractOld):
        return move
    select = move.select
    stricter = select.model_copy(
        update={
            "min_words": min(20, select.min_words + 1),
            "head": max(0, select.head - 1),
            "top_ratio": min(1.0, round(select.top_ratio + 0.25, 2)),
        }
    )
    return move.model_copy(update={"select": stricter})


def _halved(move: Any, knob: str, **also: Any) -> Any:
    """An extraction with the share `knob` halved (floor MIN_TERM_SHARE), and the settings in `also`."""
    if not isinstance(move, Extract | ExtractOld) or getattr(move.select, knob) <= MIN_TERM_SHARE:
        return move
    update = {knob: max(MIN_TERM_SHARE, round(getattr(move.select, knob) / 2, 2)), **also}
    return move.model_copy(update={"select": move.select.model_copy(update=update)})


def _distinct(move: Any) -> Any:
    return _halved(move, "max_term_share")


def _rare(move: Any) -> Any:
    return _halved(move, "max_word_share")


def _rare_fewer(move: Any) -> Any:
    # Dropping common words lowers every unit's count, the needed one's too: alone, the knob often cuts a
    # needed row, and the next step (one word fewer) alone keeps many more. Each is worse than the parent and
    # both together are better, so a one-knob-at-a-time search needs them as one step.
    if not isinstance(move, Extract | ExtractOld):
        return move
    return _halved(move, "max_word_share", min_words=max(1, move.select.min_words - 1))


KNOBS: tuple[tuple[str, Callable[[Any], Any], str], ...] = (
    ("lower", _lower, "thresholds x0.6"),
    ("short", _shorter, "output caps and previews x0.6"),
    ("fewer", _fewer, "one fewer raw recent step"),
    ("strict", _stricter, "stricter extraction (more words to mention, fewer head units, higher ratio)"),
    (
        "distinct",
        _distinct,
        "extraction: a term must be in at most half the share of units it was before to count as a mention",
    ),
    (
        "rare",
        _rare,
        "extraction: a request word must be in at most half the share of units it was before to count",
    ),
    (
        "rare_fewer",
        _rare_fewer,
        "extraction: rarer request words only (half the share), and one word fewer to count as a mention",
    ),
)


class Tighten(Proposer):
    """One variant per knob, each applied to every move it concerns."""

    type: Literal["tighten"] = "tighten"
    step: ClassVar[Literal["ut", "co"]] = "co"

    def propose(self, inputs: ProposalInput) -> list[Proposal]:
        parent = inputs.parent.guideline
        policy = parent.policy
        out = []
        for suffix, change, what in KNOBS:
            changed = policy.model_copy(
                update={
                    "write": tuple(change(m) for m in policy.write),
                    "history": tuple(change(m) for m in policy.history),
                }
            )
            if changed != policy:
                out.append(Proposal(self.type, derived(parent, changed, suffix), rationale=what))
        return unique(out, parent)
