"""Context management: the retention contract, strategies, checkpoints and recoverable clearing."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from optimizer.context.guideline import Guideline, read_guideline
from optimizer.context.policy import RetentionPolicy

if TYPE_CHECKING:
    from optimizer.context.strategies import GuidelineStrategy


def load_guideline(path: str | Path) -> GuidelineStrategy:
    """Runtime API: a guideline file (seed or learned export) as a ready-to-use `guideline` strategy."""
    from optimizer.context.strategies import GuidelineStrategy

    return GuidelineStrategy(guideline=read_guideline(path))


__all__ = ["Guideline", "RetentionPolicy", "load_guideline", "read_guideline"]
