"""`llm_rewrite`: the optimizer LLM writes extraction rules from the diff's examples, and a targeted edit
of the compressor instruction naming what was lost.

The model sees each lost fact's line with the value masked, next to lines of the same result that were
rightly dropped, and writes RE2 patterns for the needed kind of line. Rules are validated one by one
(RE2, length, no value from the examples); an edit is added only when the policy has an LLM move that
the loss went through. The natural-language instructions stay the parent's otherwise.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import Field, ValidationError

from optimizer.context.extraction import ExtractRule, Parsed, Selection, parse_units, select
from optimizer.context.policy import RetentionPolicy
from optimizer.context.strategies.oracle import needed_units
from optimizer.search.candidate import Proposal
from optimizer.search.proposers.base import Pair, ProposalInput, Proposer, derived
from optimizer.search.proposers.extract_rules import with_rules
from optimizer.search.proposers.llm import ProposeRules, parse_json_list
from optimizer.untrusted import fence
from optimizer.world.retention import RetentionClass

LINE_CHARS = 160
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

    def propose(self, inputs: ProposalInput) -> list[Proposal]:
        if inputs.llm is None:
            return []
        facts = _lost_facts(inputs.pairs)[: self.examples]
        if not facts:
            return []
        parent = inputs.parent.guideline
        examples = "\n\n".join(f["example"] for f in facts)
        literals = {f["literal"] for f in facts}
        retention = Counter(f["retention"] for f in facts).most_common(1)[0][0]
        tools = {f["tool"] for f in facts}
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
                rules, dropped = _rules(prediction.rules, literals, tools, facts, self.max_share)
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
                policy = RetentionPolicy(
                    pinned=parent.policy.pinned, write=write, history=history, budget_tokens=parent.policy.budget_tokens
                )
                edit = _edit(prediction.instruction_edit)
                updates = {}
                if edit and any(f["action"] == "compress" for f in facts) and policy.uses_compressor:
                    updates["observation"] = f"{parent.observation}\n\n{edit}"
                if edit and any(f["action"] == "summarize" for f in facts) and policy.uses_compressor:
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


def _lost_facts(pairs: Sequence[Pair]) -> list[dict[str, Any]]:
    facts = []
    seen: set[tuple[str, str]] = set()
    for pair in pairs:
        for fact in pair.diff.missing:
            source = pair.source_text(fact.source_entry)
            if fact.retention not in _CUTTABLE or source is None:
                continue
            raw, tool = source
            if (fact.literal, tool or "") in seen:
                continue
            seen.add((fact.literal, tool or ""))
            parsed = parse_units(raw)
            held = needed_units(parsed, [fact.literal])
            if not held:
                continue
            action = (fact.record or {}).get("action", "?")
            source_name = f"{tool or '?'} ({fact.retention}; dropped by {action})"
            facts.append(
                {
                    "literal": fact.literal,
                    "tool": tool or "?",
                    "retention": fact.retention,
                    "action": action,
                    "example": _example(parsed, held, fact.literal, source_name),
                    "parsed": parsed,
                    "held": frozenset(held),
                }
            )
    return facts


def _example(parsed: Parsed, held: Sequence[int], literal: str, source: str) -> str:
    needed = [parsed.units[i].text.replace(literal, "<VALUE>")[:LINE_CHARS] for i in held[:2]]
    dropped = [u.text[:LINE_CHARS] for u in parsed.units if u.index not in held and u.text.strip()][:3]
    return "\n".join([f"result of {source}:", *(f"NEEDED: {n}" for n in needed), *(f"DROPPED: {d}" for d in dropped)])


def _rules(
    reply: object, literals: set[str], tools: set[str], facts: list[dict[str, Any]], max_share: float
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
        field = item.get("field") if isinstance(item.get("field"), str) and item.get("field") else None
        try:
            rule = ExtractRule(pattern=str(item.get("pattern", "")), tool=tool, field=field)
        except ValidationError as exc:
            dropped.append(exc.errors()[0]["msg"][:80])
            continue
        if any(literal in rule.pattern for literal in literals) or "<VALUE>" in rule.pattern:
            dropped.append(f"/{rule.pattern[:40]}/ names a value from the examples")
            continue
        if len(rule.pattern) > MAX_PATTERN_CHARS:
            dropped.append(f"/{rule.pattern[:40]}.../ copies a line ({len(rule.pattern)} characters)")
            continue
        broad = next((share for f in facts if (share := _share(rule, f["parsed"])) > max_share), None)
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


def _restores(rule: ExtractRule, fact: dict[str, Any]) -> bool:
    """Whether the rule alone keeps a unit that held the lost fact, in the result it was lost from."""
    return bool(fact["held"] & _kept_alone(rule, fact["parsed"], fact["tool"]))


def _share(rule: ExtractRule, parsed: Parsed) -> float:
    """The share of a result's units the rule alone keeps."""
    return len(_kept_alone(rule, parsed, rule.tool)) / max(1, len(parsed.units))


def _edit(text: object) -> str:
    edit = str(text).strip().strip('"').strip()
    if not edit or edit.lower().rstrip(".") in ("none", "n/a", "no"):
        return ""
    return edit.splitlines()[0][:300]
