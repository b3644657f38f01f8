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
# Below these a summary cannot hold the ids of a multi-step task, nor a compressed result its matching rows.
_MIN_SUMMARY_TOKENS = 96
_MIN_OBSERVATION_TOKENS = 64


def patch_from_diffs(current: Guideline, diffs: Sequence[PairDiff]) -> list[Proposal]:
    """Candidates that undo, class by class, the losses the diffs attribute to this policy.

    Losses at write time (checkpoint 2) have two remedies with different costs, so both are proposed:
    keep fresh results of that class raw (history compression still shrinks them once old), or offload
    them behind a recall handle. Losses in summaries (checkpoint 3) clear that class to recall
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
    for write_remedy in (Action.KEEP, Action.CLEAR):
        pinned = set(policy.pinned)
        fresh = dict(policy.fresh)
        old = dict(policy.old)
        budget = policy.budget_tokens
        reasons: list[str] = []
        for (retention_name, checkpoint, action), count in losses.most_common():
            retention = RetentionClass(retention_name)
            allowed = CONTRACT[retention].allowed
            where = f"{count} loss(es) of {retention.value} at checkpoint {checkpoint}"
            if retention in pinned:
                continue
            if CONTRACT[retention].must_pin:
                pinned.add(retention)
                reasons.append(f"{where}: pin {retention.value} (the contract requires it)")
            elif checkpoint == 2:
                remedy = write_remedy if write_remedy in allowed else Action.KEEP
                if fresh.get(retention, Action.KEEP) != remedy:
                    fresh[retention] = remedy
                    verb = "keep fresh results raw" if remedy is Action.KEEP else "offload fresh results with a handle"
                    reasons.append(f"{where} ({action}): {verb} for {retention.value}")
            elif checkpoint == 3 and action in _LOSSY_AT_SUMMARY:
                if Action.CLEAR in allowed:
                    old[retention] = Action.CLEAR
                    reasons.append(f"{where} in summaries: clear old {retention.value} to recall placeholders")
                else:
                    pinned.add(retention)
                    reasons.append(f"{where} in summaries: pin {retention.value}")
            elif checkpoint == 3 and action in _CLEARING:
                old[retention] = Action.KEEP
                reasons.append(f"{where} by clearing: keep old {retention.value}")
            elif checkpoint == 4 and budget is not None:
                budget = int(budget * 1.5)
                reasons.append(f"{where} by the pre-send budget: raise it to {budget}")
        if not reasons:
            continue
        new_policy = RetentionPolicy.model_validate({
            **policy.model_dump(mode="json"),
            "pinned": [c.value for c in RetentionClass if c in pinned],
            "fresh": {c.value: a.value for c, a in fresh.items() if c not in pinned},
            "old": {c.value: a.value for c, a in old.items() if c not in pinned},
            "budget_tokens": budget,
        })
        suffix = "patch" if write_remedy is Action.KEEP else "patch-offload"
        guideline = current.model_copy(update={"policy": new_policy, "name": f"{current.name.split('+')[0]}+{suffix}"})
        if guideline.version not in {v.guideline.version for v in variants}:
            variants.append(Proposal("patch", guideline, rationale="; ".join(reasons)))
    return variants


def tighten(current: Guideline) -> list[Proposal]:
    """CO-step variants that compress more: lower thresholds, shorter compressor outputs, fewer raw steps."""
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
    shorter = policy.model_copy(update={
        "summary_max_tokens": max(_MIN_SUMMARY_TOKENS, int(policy.summary_max_tokens * 0.6)),
        "observation_max_tokens": max(_MIN_OBSERVATION_TOKENS, int(policy.observation_max_tokens * 0.6)),
    })
    if shorter != policy:
        out.append(Proposal(
            "tighten", current.model_copy(update={"policy": shorter, "name": f"{current.name}+short"}),
            rationale=(f"summary cap {policy.summary_max_tokens}->{shorter.summary_max_tokens}, "
                       f"observation cap {policy.observation_max_tokens}->{shorter.observation_max_tokens}"),
        ))
    if policy.keep_last_k > 1:
        fewer = policy.model_copy(update={"keep_last_k": policy.keep_last_k - 1})
        out.append(Proposal(
            "tighten", current.model_copy(update={"policy": fewer, "name": f"{current.name}+k{fewer.keep_last_k}"}),
            rationale=f"keep_last_k {policy.keep_last_k}->{fewer.keep_last_k}",
        ))
    return out
