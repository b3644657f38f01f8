"""`extract_rules`: extraction rules derived from the lines that held the lost facts. No model.

For each fact a pair lost from a cuttable result, the unit (line or JSON leaf) of the raw output that
held it shows its structure: a labelled line (`payment: ...`), a JSON field, or a value of a recognisable
shape. The most selective rule that matches that unit, and at most `max_share` of the output's units,
joins the extraction of that class (an `extract` move is added in front of the move that cut it when
the parent has none). Rules never contain the lost literal itself: they must generalize to other tasks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal, TypeVar

from pydantic import Field

from optimizer.context.extraction import (
    MAX_RULES,
    ExtractRule,
    Parsed,
    Selection,
    Unit,
    needed_units,
    parse_units,
    select,
)
from optimizer.context.moves import Extract, ExtractOld, HistoryMoveConfig, WriteMoveConfig
from optimizer.context.policy import RetentionPolicy
from optimizer.search.candidate import Proposal
from optimizer.search.proposers.base import ProposalInput, Proposer, derived, unique
from optimizer.search.proposers.edits import WRITE_ORDER, classes_of, inserted
from optimizer.world.retention import RetentionClass

_Extraction = TypeVar("_Extraction", Extract, ExtractOld)

_LABEL = re.compile(r"^\s*([A-Za-z][A-Za-z _/.-]{1,40}?)\s*[:=|]")
_CUTTABLE = (RetentionClass.STATIC, RetentionClass.DYNAMIC_STATE, RetentionClass.ERROR_PARTIAL)


class ExtractRules(Proposer):
    """Rules that keep the kind of line each lost fact sat on."""

    type: Literal["extract_rules"] = "extract_rules"
    max_share: float = Field(0.34, gt=0, le=1, description="A rule may keep at most this share of an output.")

    def propose(self, inputs: ProposalInput) -> list[Proposal]:
        parent = inputs.parent.guideline
        found: dict[RetentionClass, list[ExtractRule]] = {}
        reasons: list[str] = []
        for pair in inputs.pairs:
            for fact in pair.diff.missing:
                if fact.retention not in _CUTTABLE:
                    continue
                source = pair.source_text(fact.source_entry)
                if source is None:
                    continue
                raw, tool = source
                rule = derive_rule(parse_units(raw), fact.literal, tool, max_share=self.max_share)
                if rule is None:
                    continue
                rules = found.setdefault(RetentionClass(fact.retention), [])
                if rule not in rules:
                    rules.append(rule)
                    where = f"field {rule.field!r}" if rule.field else "line"
                    reasons.append(
                        f"{fact.retention} {where} of {tool} lost at checkpoint {fact.checkpoint}: "
                        f"keep /{rule.pattern}/"
                    )
        if not found:
            return []
        write, history = parent.policy.write, parent.policy.history
        for retention, rules in found.items():
            write, history = with_rules(write, history, retention, rules)
        policy = RetentionPolicy(**{**dict(parent.policy), "write": write, "history": history})
        return unique([Proposal(self.type, derived(parent, policy, "rules"), rationale="; ".join(reasons))], parent)


def with_rules(
    write: tuple[WriteMoveConfig, ...],
    history: tuple[HistoryMoveConfig, ...],
    retention: RetentionClass,
    rules: Sequence[ExtractRule],
) -> tuple[tuple[WriteMoveConfig, ...], tuple[HistoryMoveConfig, ...]]:
    """Add `rules` to every extraction of `retention` (write and history time), or add an extraction."""
    changed = False

    def extended(move: _Extraction) -> _Extraction:
        nonlocal changed
        merged = tuple(dict.fromkeys((*move.select.rules, *rules)))[:MAX_RULES]
        changed = True
        return move.model_copy(update={"select": move.select.model_copy(update={"rules": merged})})

    write = tuple(extended(m) if isinstance(m, Extract) and retention in classes_of(m) else m for m in write)
    history = tuple(extended(m) if isinstance(m, ExtractOld) and retention in classes_of(m) else m for m in history)
    if not changed:
        lossy = [m for m in write if retention in classes_of(m)]
        over = min((m.over for m in lossy), default=200)
        write = inserted(
            write, Extract(classes=(retention,), over=over, select=Selection(rules=tuple(rules))), WRITE_ORDER
        )
    return write, history


def derive_rule(parsed: Parsed, literal: str, tool: str | None, *, max_share: float) -> ExtractRule | None:
    """The most selective rule that keeps the unit holding `literal` and at most `max_share` of the units."""
    held = needed_units(parsed, [literal])
    if not held or not parsed.units:
        return None
    unit = parsed.units[held[0]]
    best: tuple[int, ExtractRule] | None = None
    for rule in _candidates(unit, literal, tool, parsed):
        if literal in rule.pattern:
            continue  # a rule must generalize, never name the lost value
        kept = _kept_by(parsed, rule, tool)
        if unit.index not in kept or len(kept) > max(1, max_share * len(parsed.units)):
            continue
        if best is None or len(kept) < best[0]:
            best = (len(kept), rule)
    return best[1] if best else None


def _candidates(unit: Unit, literal: str, tool: str | None, parsed: Parsed) -> list[ExtractRule]:
    out = []
    if parsed.is_json and unit.keys:
        key = unit.keys[-1]
        out.append(ExtractRule(pattern=shape_pattern(unit.value, anchored=True), tool=tool, field=key))
        out.append(ExtractRule(pattern=".", tool=tool, field=key))
    label = _LABEL.match(unit.value)
    if label and literal not in label.group(1) and not any(ch.isdigit() for ch in label.group(1)):
        out.append(ExtractRule(pattern=r"^\s*" + re.escape(label.group(1).strip()) + r"\s*[:=|]", tool=tool))
    out.append(ExtractRule(pattern=shape_pattern(literal), tool=tool))
    return out


def _kept_by(parsed: Parsed, rule: ExtractRule, tool: str | None) -> list[int]:
    only = Selection(rules=(rule,), mention_task=False, mention_calls=False, head=0, tail=0)
    return select(parsed, only, tool=tool, terms=None)


def shape_pattern(text: str, *, anchored: bool = False) -> str:
    """A pattern for values shaped like `text`: letter and digit runs generalized, punctuation kept."""
    parts = []
    for run in re.finditer(r"[A-Z]+|[a-z]+|\d+|\s+|.", text[:80]):
        token = run.group(0)
        if token.isdigit():
            parts.append(r"\d+")
        elif token.isupper() and token.isalpha():
            parts.append("[A-Z]+")
        elif token.islower() and token.isalpha():
            parts.append("[a-z]+")
        elif token.isspace():
            parts.append(r"\s+")
        else:
            parts.append(re.escape(token))
    body = "".join(parts)
    if anchored:
        return f"^{body}$"
    left = r"\b" if re.match(r"\w", text) else ""
    right = r"\b" if re.search(r"\w$", text[:80]) else ""
    return f"{left}{body}{right}"
