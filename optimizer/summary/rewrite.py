"""ACON's UT and CO steps on summary instructions, with the optimizer LLM, and what is refused.

UT: from a minibatch of lost facts (kind, retention class, source line, the summary that dropped it) the
optimizer writes up to three new instruction lines, each naming the kind of fact lost; they are added to
the learned part (targeted edits, not a monolithic rewrite). CO: from summaries that kept everything it
rewrites the learned part shorter. Refused, each with its reason: a line naming a value or id from the
examples (it would fit one task), a UT line naming no kind of fact that was lost (untargeted), a line
already present, and an empty reply. A CO rewrite that drops more than half the learned text is marked a
collapse: `search` then takes it only if it wins outright, never at equal scores.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from optimizer.summary.contract_text import learned_part, with_contract
from optimizer.summary.screen import LostFact, SummaryScore
from optimizer.untrusted import fence

OptimizerLM = Callable[[str, float], str]  # (prompt, temperature) -> reply

# Words a targeted line uses for each kind of lost fact.
KIND_WORDS: dict[str, tuple[str, ...]] = {
    "value": ("value", "id", "identifier", "number", "amount", "name", "code", "sku"),
    "rule": ("rule", "skill", "instruction", "policy"),
    "receipt": ("receipt", "write", "created", "confirmation", "id"),
    "page": ("page", "pagination", "showing", "warning", "partial"),
    "error": ("error", "failure", "failed", "exception"),
}
_ID = re.compile(r"[\w-]*\d[\w-]*")
MAX_LINES = 3
COLLAPSE_SHARE = 0.5


@dataclass(frozen=True)
class UpdateInstructions:
    """Add up to three short lines to summary instructions so that the kinds of fact listed below survive
    the next summary. Each line names the kind of fact it protects (ids and values, skill rules verbatim,
    write receipts, error messages, paging warnings). Never copy a value, id or name from the examples:
    a line must fit every task. Reply with the new lines only, one per line."""

    instructions: str
    failures: str


@dataclass(frozen=True)
class ShortenInstructions:
    """Rewrite the summary instructions below to be shorter while the summaries keep every fact they keep
    now. Keep each sentence that protects a kind of fact; merge and cut the rest. Never copy a value, id or
    name from the examples. Reply with the rewritten instructions only."""

    instructions: str
    successes: str


@dataclass
class Proposal:
    """One rewrite: the full text (learned part + contract), the optimizer's lines that were kept, and
    every refused line with its reason."""

    step: str  # "ut" or "co"
    text: str
    llm_lines: tuple[str, ...]
    refused: list[tuple[str, str]] = field(default_factory=list)
    collapse: bool = False
    reply: str = ""


def render(signature: UpdateInstructions | ShortenInstructions) -> str:
    doc = " ".join((type(signature).__doc__ or "").split())
    fields = "\n\n".join(f"# {name}\n{value}" for name, value in vars(signature).items())
    return f"{doc}\n\n{fields}"


def minibatch(lost: Sequence[LostFact], size: int, seed: int) -> list[LostFact]:
    """Up to `size` lost facts, one kind after another so that a common kind does not crowd out the rest."""
    by_kind: dict[str, list[LostFact]] = {}
    for fact in lost:
        by_kind.setdefault(fact.kind, []).append(fact)
    rng = random.Random(seed)
    for facts in by_kind.values():
        rng.shuffle(facts)
    out: list[LostFact] = []
    while len(out) < size and any(by_kind.values()):
        for kind in sorted(by_kind):
            if by_kind[kind] and len(out) < size:
                out.append(by_kind[kind].pop())
    return out


def failure_report(batch: Sequence[LostFact]) -> str:
    blocks = []
    for i, fact in enumerate(batch, 1):
        blocks.append(
            f"## Failure {i}: a {fact.kind} from a {fact.source_class} result was lost\n"
            f"Line that held it:\n{fence(fact.source, 'source')}\n"
            f"The summary that dropped it:\n{fence(fact.summary[:1200], 'summary')}"
        )
    return "\n\n".join(blocks)


def ut_step(lm: OptimizerLM, parent: str, lost: Sequence[LostFact], *, size: int = 4, seed: int = 0) -> Proposal:
    batch = minibatch(lost, size, seed)
    base = learned_part(parent)
    reply = lm(render(UpdateInstructions(base, failure_report(batch))), 0.7)
    literals = _literals(batch)
    kinds = {f.kind for f in batch}
    refused: list[tuple[str, str]] = []
    kept: list[str] = []
    for line in _lines(reply)[: MAX_LINES * 2]:
        reason = _refusal(line, literals, base, kept) or _untargeted(line, kinds)
        if reason:
            refused.append((line, reason))
        elif len(kept) < MAX_LINES:
            kept.append(line)
    if not kept and not refused:
        refused.append((reply.strip()[:80], "empty reply"))
    text = with_contract("\n".join([base, *kept]) if kept else base)
    return Proposal("ut", text, tuple(kept), refused, reply=reply)


def co_step(lm: OptimizerLM, parent: str, successes: Sequence[SummaryScore], literals: set[str]) -> Proposal:
    base = learned_part(parent)
    shown = "\n\n".join(
        f"## A summary that kept all {s.needed} needed facts ({s.tokens} tokens)" for s in successes[:4]
    )
    reply = lm(render(ShortenInstructions(base, shown or "(none)")), 0.7)
    refused: list[tuple[str, str]] = []
    kept: list[str] = []
    for line in _lines(reply):
        reason = _refusal(line, literals, "", kept)
        if reason:
            refused.append((line, reason))
        else:
            kept.append(line)
    if not kept:
        refused.append((reply.strip()[:80], "empty reply"))
        return Proposal("co", with_contract(base), (), refused, reply=reply)
    new = "\n".join(kept)
    collapse = len(new) < COLLAPSE_SHARE * len(base)
    new_lines = tuple(line for line in kept if line not in base)
    return Proposal("co", with_contract(new), new_lines, refused, collapse, reply)


def _lines(reply: str) -> list[str]:
    out = []
    for raw in reply.splitlines():
        line = raw.strip().strip("`").strip()
        line = re.sub(r"^(\d+[.)]|[-*•])\s*", "", line).strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


def _literals(batch: Sequence[LostFact]) -> set[str]:
    found = {f.literal for f in batch}
    for fact in batch:
        found |= {t for t in _ID.findall(fact.source) if len(t) >= 3}
    return found


def _refusal(line: str, literals: set[str], base: str, kept: Sequence[str]) -> str | None:
    if any(literal and literal in line for literal in literals):
        return "names a value or id from the examples"
    if line in base or line in kept:
        return "already in the instructions"
    return None


def _untargeted(line: str, kinds: set[str]) -> str | None:
    lower = line.lower()
    if any(word in lower for kind in kinds for word in KIND_WORDS.get(kind, ())):
        return None
    return f"names no kind of fact that was lost ({', '.join(sorted(kinds))})"


def llm_lines(text: str, seed: str) -> list[str]:
    """Lines of `text`'s learned part that the seed's learned part does not have: what the optimizer wrote."""
    before = set(_lines(learned_part(seed)))
    return [line for line in _lines(learned_part(text)) if line not in before]
