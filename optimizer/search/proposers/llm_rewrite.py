"""`llm_rewrite`: the optimizer LLM writes extraction rules from the diff's examples, and a targeted edit
of the compressor instruction naming what was lost.

The model is given the work `extract_rules` cannot do. By default it sees only the lost facts for which
that proposer derives no rule (a label, a JSON field, the value's shape): mostly rows of a table, where the
value starts the line and every row has the same shape. For each such result it sees the task's request,
the needed rows with their values masked and the rows of the same shape that were rightly dropped, and
writes RE2 patterns for what the needed rows share (a status, a marker, a column). Rules are validated one
by one (RE2, length, no value or id from the examples, not too broad, keeps a lost line); an edit is added
only when the policy has an LLM move that the loss went through. Losses `extract_rules` already covers get
no call: the model's copy of that rule would be a duplicate candidate that cost minutes.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from pydantic import Field, ValidationError

from optimizer.context.extraction import ExtractRule, Parsed, Selection, needed_units, parse_units, select
from optimizer.context.policy import RetentionPolicy
from optimizer.search.candidate import Proposal
from optimizer.search.proposers.base import Pair, ProposalInput, Proposer, derived
from optimizer.search.proposers.extract_rules import derive_rule, with_rules
from optimizer.search.proposers.llm import parse_json_list
from optimizer.untrusted import fence
from optimizer.world.retention import RetentionClass

LINE_CHARS = 160
REQUEST_CHARS = 300
# A pattern this long copies a line rather than describing a kind of line: it cannot generalize.
MAX_PATTERN_CHARS = 60
_CUTTABLE = (RetentionClass.STATIC, RetentionClass.DYNAMIC_STATE, RetentionClass.ERROR_PARTIAL)


class LlmRewrite(Proposer):
    """K proposals of rules and a targeted edit, from the pairs' examples."""

    type: Literal["llm_rewrite"] = "llm_rewrite"
    uses_llm: ClassVar[bool] = True
    candidates: int = Field(1, ge=1, le=10, description="Proposals per parent (ACON: K=5).")
    examples: int = Field(4, ge=1, le=20, description="Lost facts shown to the model.")
    max_share: float = Field(0.34, gt=0, le=1, description="A rule may keep at most this share of an example.")
    residual_only: bool = Field(
        True, description="Show only losses `extract_rules` derives no rule for (no call when there are none)."
    )

    def propose(self, inputs: ProposalInput) -> list[Proposal]:
        if inputs.llm is None:
            return []
        from optimizer.search.proposers.signatures import ProposeRules  # imports DSPy: only when asking

        facts = _lost_facts(inputs.pairs, self.max_share)
        if self.residual_only:
            facts = [f for f in facts if not f.derivable]
        facts = facts[: self.examples]
        if not facts:
            return []
        parent = inputs.parent.guideline
        examples = "\n\n".join(_examples(facts))
        literals = {literal for f in facts for literal in f.literals}
        ids = _ids("\n".join([examples, *(f.request for f in facts)]))
        retention = Counter(f.retention for f in facts).most_common(1)[0][0]
        tools = {f.tool for f in facts}
        out = []
        for index in range(self.candidates):
            before = inputs.llm.tokens
            seed = inputs.seed * 1000 + inputs.round * 10 + index
            try:
                prediction = inputs.llm.run(
                    ProposeRules,
                    temperature=0.0 if index == 0 else 0.7,
                    seed=seed,
                    policy=json.dumps(parent.policy.model_dump(mode="json")),
                    examples=fence(examples, "examples"),
                )
                rules, dropped = _rules(prediction.rules, literals | ids, tools, facts, self.max_share)
                if not rules:
                    why = "; ".join(dropped) or "the model found no pattern that separates the needed lines"
                    out.append(
                        Proposal(
                            self.type,
                            None,
                            error=f"no usable rule: {why}",
                            llm=True,
                            optimizer_tokens=inputs.llm.tokens - before,
                        )
                    )
                    continue
                write, history = with_rules(
                    parent.policy.write, parent.policy.history, RetentionClass(retention), rules
                )
                policy = RetentionPolicy(**{**dict(parent.policy), "write": write, "history": history})
                edit = _edit(prediction.instruction_edit)
                updates = {}
                if edit and any(f.action == "compress" for f in facts) and policy.uses_compressor:
                    updates["observation"] = f"{parent.observation}\n\n{edit}"
                if edit and any(f.action == "summarize" for f in facts) and policy.uses_compressor:
                    updates["history"] = f"{parent.history}\n\n{edit}"
                guideline = derived(parent, policy, f"llm{inputs.round}.{index}", **updates)
                rationale = "rules " + ", ".join(f"/{r.pattern}/" for r in rules)
                if dropped:
                    rationale += f" (refused: {'; '.join(dropped)})"
                if updates:
                    rationale += f"; edit: {edit}"
                out.append(
                    Proposal(
                        self.type, guideline, rationale=rationale, llm=True, optimizer_tokens=inputs.llm.tokens - before
                    )
                )
            except Exception as exc:  # a reply the model could not format: a failed proposal, on the record
                out.append(
                    Proposal(
                        self.type,
                        None,
                        error=f"{type(exc).__name__}: {str(exc)[:200]}",
                        llm=True,
                        call_failed=True,
                        optimizer_tokens=inputs.llm.tokens - before,
                    )
                )
        return out


@dataclass
class _LostResult:
    """A tool result that lost cuttable facts, as the model is shown it and the rules are checked on."""

    tool: str
    retention: str
    action: str  # the move that dropped it
    request: str
    parsed: Parsed
    literals: list[str] = field(default_factory=list)
    held: frozenset[int] = frozenset()  # the units that held a lost literal
    derivable: bool = True  # whether `extract_rules` derives a rule for every literal it lost

    @property
    def source(self) -> str:
        return f"{self.tool} ({self.retention}; dropped by {self.action})"


def _lost_facts(pairs: Sequence[Pair], max_share: float) -> list[_LostResult]:
    """One record per result that lost cuttable facts."""
    found: dict[tuple[str, int], _LostResult] = {}
    for pair in pairs:
        for fact in pair.diff.missing:
            source = pair.source_text(fact.source_entry)
            if fact.retention not in _CUTTABLE or source is None or fact.source_entry is None:
                continue
            raw, tool = source
            key = (pair.compressed.task_id, fact.source_entry)
            if key not in found:
                found[key] = _LostResult(
                    tool=tool or "?",
                    retention=fact.retention,
                    action=(fact.record or {}).get("action", "?"),
                    request=pair.task.instruction if pair.task is not None else "",
                    parsed=parse_units(raw),
                )
            result = found[key]
            held = needed_units(result.parsed, [fact.literal])
            if not held or fact.literal in result.literals:
                continue
            result.literals.append(fact.literal)
            result.held |= frozenset(held)
            if derive_rule(result.parsed, fact.literal, tool, max_share=max_share) is None:
                result.derivable = False
    return [r for r in found.values() if r.literals]


def _examples(facts: Sequence[_LostResult]) -> list[str]:
    """Per result: the request that needed it, its needed units (values masked) and dropped units of the same
    shape, so that what sets the needed ones apart is visible."""
    out = []
    for fact in facts:
        parsed = fact.parsed
        held = sorted(fact.held)
        needed = [_masked(parsed.units[i].text, fact.literals) for i in held[:3]]
        shape = _shape(parsed.units[held[0]].text)
        others = [u for u in parsed.units if u.index not in fact.held and u.text.strip()]
        alike = [u for u in others if _shape(u.text) == shape] or others
        dropped = [u.text[:LINE_CHARS] for u in alike[:4]]
        lines = [f"request: {' '.join(fact.request.split())[:REQUEST_CHARS]}"] if fact.request else []
        lines.append(f"result of {fact.source}:")
        lines += [f"NEEDED: {n}" for n in needed] + [f"DROPPED: {d}" for d in dropped]
        out.append("\n".join(lines))
    return out


def _masked(text: str, literals: Sequence[str]) -> str:
    for literal in sorted(literals, key=len, reverse=True):
        text = text.replace(literal, "<VALUE>")
    return text[:LINE_CHARS]


def _shape(text: str) -> tuple[int, int]:
    """A row's shape: how many column separators it has, of the kinds tables here use."""
    return text.count("|"), text.count("\t")


_ID = re.compile(r"[\w-]*\d[\w-]*")


def _ids(text: str) -> set[str]:
    """Tokens with a digit in the examples or requests (`AG-317`, `CUS-77815`): a rule naming one fits one task."""
    return {token for token in _ID.findall(text) if len(token) >= 3}


def _rules(
    reply: object, literals: set[str], tools: set[str], facts: list[_LostResult], max_share: float
) -> tuple[list[ExtractRule], list[str]]:
    """The reply's valid rules, and why each other one was refused (RE2, a value, a copied line, too broad,
    or keeping none of the lines that held a lost fact)."""
    rules: list[ExtractRule] = []
    dropped: list[str] = []
    for item in parse_json_list(reply)[:4]:
        if not isinstance(item, dict):
            dropped.append(f"not an object: {str(item)[:40]}")
            continue
        tool = item.get("tool") if item.get("tool") in tools else None
        key = item.get("field") if isinstance(item.get("field"), str) and item.get("field") else None
        try:
            rule = ExtractRule(pattern=str(item.get("pattern", "")), tool=tool, field=key)
        except ValidationError as exc:
            dropped.append(exc.errors()[0]["msg"][:80])
            continue
        plain = rule.pattern.replace("\\", "")
        if any(literal in plain for literal in literals) or "<VALUE>" in rule.pattern:
            dropped.append(f"/{rule.pattern[:40]}/ names a value or id from the examples")
            continue
        if len(rule.pattern) > MAX_PATTERN_CHARS:
            dropped.append(f"/{rule.pattern[:40]}.../ copies a line ({len(rule.pattern)} characters)")
            continue
        broad = next((share for f in facts if (share := _share(rule, f.parsed)) > max_share), None)
        if broad is not None:
            dropped.append(f"/{rule.pattern[:40]}/ keeps {broad:.0%} of a result (too broad)")
            continue
        if not any(_restores(rule, f) for f in facts):
            dropped.append(f"/{rule.pattern[:40]}/ keeps no line that held a lost fact")
            continue
        if rule not in rules:
            rules.append(rule)
    return rules, dropped


def _kept_alone(rule: ExtractRule, parsed: Parsed, tool: str | None) -> set[int]:
    """The units of a result that the rule, with no mention, head or tail, keeps."""
    only = Selection(rules=(rule,), mention_task=False, mention_calls=False, head=0, tail=0)
    return set(select(parsed, only, tool=tool, terms=None))


def _restores(rule: ExtractRule, fact: _LostResult) -> bool:
    """Whether the rule alone keeps a unit that held the lost fact, in the result it was lost from."""
    return bool(fact.held & _kept_alone(rule, fact.parsed, fact.tool))


def _share(rule: ExtractRule, parsed: Parsed) -> float:
    """The share of a result's units the rule alone keeps."""
    return len(_kept_alone(rule, parsed, rule.tool)) / max(1, len(parsed.units))


def _edit(text: object) -> str:
    edit = str(text).strip().strip('"').strip()
    if not edit or edit.lower().rstrip(".") in ("none", "n/a", "no"):
        return ""
    return edit.splitlines()[0][:300]
