"""The deterministic proposer: policy patches read straight off the provenance diffs, and tighter
variants for the CO step. No model; every change cites the diff that motivated it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from optimizer.context.contract import CONTRACT, Action
from optimizer.context.guideline import Guideline, RetentionPolicy
from optimizer.mining.provenance import PairDiff
from optimizer.search.candidate import Proposal
from optimizer.world.retention import RetentionClass

_LOSSY_AT_SUMMARY = ("summarize",)
_CLEARING = ("clear", "mask", "drop", "offload")


def patch_from_diffs(current: Guideline, diffs: Sequence[PairDiff]) -> Proposal | None:
    """One candidate that undoes, class by class, the losses the diffs attribute to this policy."""
    policy = current.policy
    pinned = set(policy.pinned)
    actions = dict(policy.actions)
    t_obs = policy.t_obs
    budget = policy.budget_tokens
    reasons: list[str] = []
    losses = Counter(
        (f.retention, f.checkpoint, (f.record or {}).get("action"))
        for d in diffs for f in d.missing if f.retention and f.checkpoint
    )
    for (retention_name, checkpoint, action), count in losses.most_common():
        retention = RetentionClass(retention_name)
        allowed = CONTRACT[retention].allowed
        where = f"{count} loss(es) of {retention.value} at checkpoint {checkpoint}"
        if retention in pinned:
            continue
        if CONTRACT[retention].must_pin:
            pinned.add(retention)
            reasons.append(f"{where}: pin {retention.value} (the contract requires it)")
        elif checkpoint == 3 and action in _LOSSY_AT_SUMMARY:
            if Action.CLEAR in allowed and actions.get(retention) != Action.CLEAR:
                actions[retention] = Action.CLEAR
                reasons.append(f"{where} in summaries: clear {retention.value} to recall placeholders instead")
            else:
                pinned.add(retention)
                reasons.append(f"{where} in summaries: pin {retention.value}")
        elif checkpoint == 3 and action in _CLEARING:
            actions[retention] = Action.KEEP
            reasons.append(f"{where} by clearing: keep {retention.value}")
        elif checkpoint == 2:
            if action == "compress" and Action.CLEAR in allowed:
                actions[retention] = Action.CLEAR
                reasons.append(f"{where} by observation compression: offload {retention.value} with a handle instead")
            else:
                t_obs = int(t_obs * 2)
                reasons.append(f"{where} at write time: raise t_obs to {t_obs}")
        elif checkpoint == 4 and budget is not None:
            budget = int(budget * 1.5)
            reasons.append(f"{where} by the pre-send budget: raise it to {budget}")
    if not reasons:
        return None
    new_policy = policy.model_copy(update={
        "pinned": tuple(c for c in RetentionClass if c in pinned),
        "actions": {c: a for c, a in actions.items() if c not in pinned},
        "t_obs": t_obs,
        "budget_tokens": budget,
    })
    new_policy = RetentionPolicy.model_validate(new_policy.model_dump())
    guideline = current.model_copy(update={"policy": new_policy, "name": f"{current.name}+patch"})
    return Proposal("patch", guideline, rationale="; ".join(reasons))


def tighten(current: Guideline) -> list[Proposal]:
    """CO-step variants that compress more: lower thresholds, fewer raw steps."""
    policy = current.policy
    out = []
    lower = policy.model_copy(update={
        "t_hist": max(256, int(policy.t_hist * 0.6)), "t_obs": max(128, int(policy.t_obs * 0.6)),
    })
    if lower != policy:
        out.append(Proposal(
            "tighten", current.model_copy(update={"policy": lower, "name": f"{current.name}+lower"}),
            rationale=f"t_hist {policy.t_hist}->{lower.t_hist}, t_obs {policy.t_obs}->{lower.t_obs}",
        ))
    if policy.keep_last_k > 1:
        fewer = policy.model_copy(update={"keep_last_k": policy.keep_last_k - 1})
        out.append(Proposal(
            "tighten", current.model_copy(update={"policy": fewer, "name": f"{current.name}+k{fewer.keep_last_k}"}),
            rationale=f"keep_last_k {policy.keep_last_k}->{fewer.keep_last_k}",
        ))
    return out
