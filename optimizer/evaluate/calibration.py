"""Tier 0 fitted to the target agent: how often the real agent makes the recalls the reference agent makes.

The reference agent recalls every cleared result its context says it needs (`recall = "honest"`); a small
model often does not, so tier 0 passes cells the real agent fails. Its `recall_probability` knob makes each
recall with probability p. From cells that ran at both tiers, a tier-0 run that needed k recalls passes
with probability p**k where the never-recalling run fails (1 where both pass, 0 where the honest run
fails); p is fitted by maximum likelihood on the tier-1 verdicts, and judged on other cells.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from optimizer.evaluate.stats import wilson_interval

GRID = tuple(i / 20 for i in range(21))


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

    def pass_probability(self, p: float) -> float:
        made = p**self.recalls
        return made * self.honest_ok + (1 - made) * self.never_ok


def fit_recall_probability(cells: Sequence[Cell]) -> float:
    """The maximum-likelihood p on a grid of 0.05 (ties: the larger, nearer the default of 1)."""

    def log_likelihood(p: float) -> float:
        total = 0.0
        for cell in cells:
            q = min(max(cell.pass_probability(p), 1e-3), 1 - 1e-3)
            total += math.log(q if cell.tier1_ok else 1 - q)
        return total

    return max(GRID, key=lambda p: (round(log_likelihood(p), 9), p))


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
