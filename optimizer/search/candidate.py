"""A candidate guideline, what is known about it, and a proposer's output."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from optimizer.context.guideline import Guideline
from optimizer.context.strategies import GuidelineStrategy
from optimizer.evaluate.scores import Scores
from optimizer.jsontypes import JSONObject, JSONRecord, dict_of_records, flag, integer, optional_text, text

# Where a candidate was screened. `train`: the tasks pairs are mined from; `subset`: the part of them an
# LLM-compressing candidate is screened on first; `val`: selection; `confirm`: tier 1 on validation tasks.
TASK_SETS = ("train", "subset", "val", "confirm")


def screened(guideline: Guideline) -> GuidelineStrategy:
    """A candidate as the job runs it. The job studies the seed and the LLM baselines as given, unpinned
    classes included (it says so when it starts), and its validator keeps every proposal pinned."""
    return GuidelineStrategy(guideline=guideline, allow_unpinned=True)


def distinct_moves(order: Sequence[Candidate], count: int) -> list[Candidate]:
    """The first `count` of `order`, preferring candidates whose moves differ from those already taken.

    Tier 0 ranks near-twins together (a tightened knob, one rule more), and the real agent's verdict on one
    is mostly its verdict on the other: spending a confirmation on each would leave the choice untested."""
    picked: list[Candidate] = []
    seen: set[tuple[tuple[str, str, tuple[str, ...]], ...]] = set()
    for candidate in order:
        if len(picked) < count and move_signature(candidate) not in seen:
            picked.append(candidate)
            seen.add(move_signature(candidate))
    picked += [c for c in order if c not in picked][: count - len(picked)]
    return sorted(picked, key=list(order).index)


def other_move_sets(ranked: Sequence[Candidate], have: Sequence[Candidate], count: int) -> list[Candidate]:
    """The best of each move set in `ranked` that `have` lacks, until `count` move sets are covered.

    Selection's shortlist is the top of tier 0's ranking, often one guideline's tightenings: when the real agent
    rejects one it rejects them all, so its other confirmations go to the best of other move sets, wherever
    tier 0 ranked them. A guideline with no move is full context again, which tier 1 always runs."""
    seen = {move_signature(c) for c in have} - {()}
    extra: list[Candidate] = []
    for candidate in ranked:
        if len(seen) >= count:
            break
        signature = move_signature(candidate)
        if signature and signature not in seen:
            extra.append(candidate)
            seen.add(signature)
    return extra


def mildest_within(
    order: Sequence[Candidate],
    have: Sequence[Candidate],
    screen: str,
    peak_ceiling: float,
    feasible: Callable[[Scores], bool],
) -> Candidate | None:
    """The candidate of `order` that keeps the most on `screen` (highest mean peak) while its peak stays at most
    `peak_ceiling` and its success is `feasible`, of a move set none of `have` uses (None if there is none)."""
    taken = {move_signature(c) for c in have}
    pool = [
        c
        for c in order
        if screen in c.screens
        and move_signature(c)
        and move_signature(c) not in taken
        and c.screens[screen].peak_mean <= peak_ceiling
        and feasible(c.screens[screen])
    ]
    return max(pool, key=lambda c: c.screens[screen].peak_mean, default=None)


def move_signature(candidate: Candidate) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """Which moves act at which stage on which classes: knob values and rules left out."""
    policy = candidate.guideline.policy
    return tuple(
        (stage, move.move, tuple(move.classes or ()))
        for stage, moves in (("write", policy.write), ("history", policy.history))
        for move in moves
    )


@dataclass
class Candidate:
    guideline: Guideline
    origin: str  # seed | baseline:<name> | a proposer's type | gepa
    round: int
    parent: str | None = None  # parent guideline version
    rationale: str = ""
    llm: bool = False  # written by an LLM proposer
    rejected: str | None = None  # why it may not be chosen (validator, budget, tier-1 confirmation)
    screens: dict[str, Scores] = field(default_factory=dict)

    @property
    def version(self) -> str:
        return self.guideline.version

    @property
    def uses_compressor(self) -> bool:
        return self.guideline.policy.uses_compressor

    def to_dict(self) -> JSONObject:
        return {
            "guideline": self.guideline.to_markdown(),
            "origin": self.origin,
            "round": self.round,
            "parent": self.parent,
            "rationale": self.rationale,
            "llm": self.llm,
            "rejected": self.rejected,
            "screens": {name: scores.to_dict() for name, scores in self.screens.items()},
        }

    @classmethod
    def from_dict(cls, data: JSONRecord) -> Candidate:
        return cls(
            Guideline.from_markdown(text(data["guideline"]), source="state"),
            text(data["origin"]),
            integer(data["round"]),
            optional_text(data.get("parent")),
            text(data.get("rationale", "")),
            flag(data.get("llm", False)),
            optional_text(data.get("rejected")),
            dict_of_records(data.get("screens") or {}, Scores.from_dict),
        )


@dataclass(frozen=True)
class Proposal:
    """What a proposer returned: a guideline, or the reason it could not produce one."""

    origin: str
    guideline: Guideline | None
    rationale: str = ""
    error: str | None = None
    optimizer_tokens: int = 0
    llm: bool = False
    # The model call itself failed (an endpoint error or an unparseable reply), as opposed to a reply whose
    # proposal was refused: only the first is a fault the infrastructure counts report.
    call_failed: bool = False

    def to_dict(self) -> JSONObject:
        return {
            "origin": self.origin,
            "rationale": self.rationale,
            "error": self.error,
            "llm": self.llm,
            "optimizer_tokens": self.optimizer_tokens,
            "call_failed": self.call_failed,
            "guideline": self.guideline.to_markdown() if self.guideline is not None else None,
        }

    @classmethod
    def from_dict(cls, data: JSONRecord) -> Proposal:
        written = optional_text(data.get("guideline"))
        return cls(
            text(data["origin"]),
            Guideline.from_markdown(written, source="proposal") if written else None,
            text(data.get("rationale", "")),
            optional_text(data.get("error")),
            integer(data.get("optimizer_tokens", 0)),
            flag(data.get("llm", False)),
            flag(data.get("call_failed", False)),
        )
