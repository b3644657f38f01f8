"""Where each part of a guideline came from: the chain of candidates back to its root, and what each
step changed (a move added or retuned, rules added, an instruction edited) and which proposer made it.

The report uses this to say which parts of the chosen guideline the LLM wrote, and to find the best
candidate whose lineage has no LLM step (what the deterministic proposers reached alone).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from optimizer.context.guideline import Guideline
from optimizer.report.model import Part
from optimizer.search.candidate import Candidate


def lineage(candidates: Mapping[str, Candidate], version: str) -> list[Candidate]:
    """From the root (seed or a translated baseline) to `version`."""
    chain: list[Candidate] = []
    seen: set[str] = set()
    current = candidates.get(version)
    while current is not None and current.version not in seen:
        chain.append(current)
        seen.add(current.version)
        current = candidates.get(current.parent) if current.parent else None
    return list(reversed(chain))


def parts(candidates: Mapping[str, Candidate], version: str) -> list[Part]:
    chain = lineage(candidates, version)
    if not chain:
        return []
    out = [Part(f"root: {chain[0].guideline.name}", chain[0].origin, chain[0].llm, chain[0].round, chain[0].version)]
    for parent, child in itertools.pairwise(chain):
        for change in changes(parent.guideline, child.guideline):
            out.append(Part(change, child.origin, child.llm, child.round, child.version))
    return out


def llm_free(candidates: Mapping[str, Candidate], version: str) -> bool:
    return not any(c.llm for c in lineage(candidates, version))


def changes(old: Guideline, new: Guideline) -> list[str]:
    """What differs between two guidelines, move by move, in words."""
    out: list[str] = []
    if old.policy.pinned != new.policy.pinned:
        out.append(f"pinned: {[c.value for c in old.policy.pinned]} -> {[c.value for c in new.policy.pinned]}")
    for stage in ("write", "history"):
        before = {m.move: m for m in getattr(old.policy, stage)}
        after = {m.move: m for m in getattr(new.policy, stage)}
        for name in after.keys() - before.keys():
            out.append(f"{stage}: added {name}")
        for name in before.keys() - after.keys():
            out.append(f"{stage}: removed {name}")
        for name in before.keys() & after.keys():
            a = before[name].model_dump(mode="json")
            b = after[name].model_dump(mode="json")
            for key in sorted(set(a) | set(b)):
                if a.get(key) == b.get(key):
                    continue
                if key == "select":
                    rules_a = a[key].get("rules", [])
                    rules_b = b[key].get("rules", [])
                    added = [r["pattern"] for r in rules_b if r not in rules_a]
                    if added:
                        out.append(f"{stage} {name}: rules " + ", ".join(f"/{p}/" for p in added))
                    # From the models, not the dumps: a knob left out of the dump while off still has a value.
                    old_select, new_select = before[name].select, after[name].select
                    out.extend(
                        f"{stage} {name}: {k} {getattr(old_select, k)} -> {getattr(new_select, k)}"
                        for k in type(new_select).model_fields
                        if k != "rules" and getattr(old_select, k) != getattr(new_select, k)
                    )
                else:
                    out.append(f"{stage} {name}: {key} {a.get(key)} -> {b.get(key)}")
    if old.policy.budget_tokens != new.policy.budget_tokens:
        out.append(f"budget_tokens {old.policy.budget_tokens} -> {new.policy.budget_tokens}")
    if old.history != new.history:
        out.append("history compressor instruction rewritten")
    if old.observation != new.observation:
        out.append("observation compressor instruction rewritten")
    return out
