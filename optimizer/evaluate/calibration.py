"""Tier 0 fitted to the target agent: how often the real agent makes the recalls the reference agent makes,
and how often it acts on what a compressed context still shows.

The reference agent recalls every cleared result its context says it needs (`recall = "honest"`); a small
model often does not, so tier 0 passes cells the real agent fails. Its `recall_probability` knob makes each
recall with probability p. From cells that ran at both tiers, a tier-0 run that needed k recalls passes
with probability p**k where the never-recalling run fails (1 where both pass, 0 where the honest run
fails); p is fitted by maximum likelihood on the tier-1 verdicts, and judged on other cells.

The reference agent also acts on every needed fact its request shows, however the context around it was
edited; the 1.5B agent, with every needed fact still visible, misreads a context that was masked and
extracted (it answers a stock figure it computed instead of the one it read). Tier 0 has no model of that
behaviour, so the fit has a second factor: each compression edit the episode made (a record: an
extraction, a mask, a clear) leaves the agent's run intact with probability u, so a cell with e edits
passes with u**e times the recall model's probability. u is fitted with p (the same likelihood) and
judged on the same held-out cells; u = 1 is tier 0 as it is.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from optimizer.stats import wilson_interval

GRID = tuple(i / 20 for i in range(21))
# Finer near 1: with tens of edits an episode, u = 0.95 and u = 1 are far apart.
USE_GRID = tuple(sorted({*GRID, *(1 - i / 200 for i in range(1, 20))}))


@dataclass(frozen=True)
class Cell:
    """One (strategy, task, sampling seed) that ran at tier 1, with tier 0's verdicts on the same task."""

    strategy: str
    task_id: str
    seed: int
    split: str
    honest_ok: bool  # tier 0, recalling whatever its context says it needs
    never_ok: bool  # tier 0, never recalling
    recalls: int  # recalls the honest tier-0 run made
    tier1_ok: bool
    none_tier1_ok: bool | None  # full context at tier 1 on the same task and seed, where it ran
    edits: int = 0  # compression records of the honest tier-0 run

    def pass_probability(self, p: float, u: float = 1.0) -> float:
        made = p**self.recalls
        return u**self.edits * (made * self.honest_ok + (1 - made) * self.never_ok)


@dataclass(frozen=True)
class AgentModel:
    """What tier 0 is calibrated with: the recall probability and the per-edit probability of acting intact."""

    recall_probability: float
    use_probability: float


def _log_likelihood(cells: Sequence[Cell], p: float, u: float) -> float:
    total = 0.0
    for cell in cells:
        q = min(max(cell.pass_probability(p, u), 1e-3), 1 - 1e-3)
        total += math.log(q if cell.tier1_ok else 1 - q)
    return total


def fit_recall_probability(cells: Sequence[Cell]) -> float:
    """The maximum-likelihood p on a grid of 0.05 (ties: the larger, nearer the default of 1)."""
    return max(GRID, key=lambda p: (round(_log_likelihood(cells, p, 1.0), 9), p))


def fit_agent_model(cells: Sequence[Cell]) -> AgentModel:
    """The maximum-likelihood (p, u) on the grids (ties: the larger of each, nearer tier 0 as it is)."""
    p, u = max(
        ((p, u) for p in GRID for u in USE_GRID),
        key=lambda pu: (round(_log_likelihood(cells, *pu), 9), pu[1], pu[0]),
    )
    return AgentModel(p, u)


def agreement(cells: Sequence[Cell], tier0_ok: Callable[[Cell], bool]) -> dict[str, Any]:
    """How a tier-0 verdict (`tier0_ok`) matches tier 1 over `cells`.

    False pass: tier 0 passes a compressing strategy's cell that the agent failed although it solved the
    task with full context on that seed (a failure tier 0 would have let a guideline ship with)."""
    agree = sum(tier0_ok(c) == c.tier1_ok for c in cells)
    guarded = [c for c in cells if c.strategy != "none" and c.none_tier1_ok and tier0_ok(c)]
    false_pass = sum(not c.tier1_ok for c in guarded)
    return {
        "cells": len(cells),
        "agreement": agree / len(cells) if cells else None,
        "agreement_ci": wilson_interval(agree, len(cells)),
        "false_pass": false_pass,
        "false_pass_of": len(guarded),
        "false_pass_rate": false_pass / len(guarded) if guarded else None,
        "false_pass_ci": wilson_interval(false_pass, len(guarded)),
    }


def brier(cells: Sequence[Cell], probability: Callable[[Cell], float]) -> float | None:
    """Mean squared gap between tier 0's pass probability and tier 1's verdict (0 is perfect, lower is better):
    a calibrated tier 0 is judged on what it predicts, not only on a pass/fail threshold."""
    if not cells:
        return None
    return sum((probability(c) - c.tier1_ok) ** 2 for c in cells) / len(cells)
