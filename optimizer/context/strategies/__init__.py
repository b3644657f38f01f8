"""All context strategies, and `StrategyConfig`, the discriminated union that selects one by `type`.

Adding a strategy: one module with one `ContextStrategy` subclass, one entry point in the
`acon.strategies` group (acon's own in `pyproject.toml`; a plugin's in its own package). Every list of
strategy names below is derived from the registry; see CONTRIBUTING.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias, get_args

from pydantic import TypeAdapter

from optimizer.context.strategies.base import Condensation, ContextStrategy, StrategyContext, Written
from optimizer.context.strategies.clear_tool_uses import ClearToolUses
from optimizer.context.strategies.fifo import Fifo
from optimizer.context.strategies.guideline import GuidelineStrategy
from optimizer.context.strategies.llm_history import LlmHistory
from optimizer.context.strategies.llm_observation import LlmObservation
from optimizer.context.strategies.mask_last_n import MaskLastN
from optimizer.context.strategies.none import NoCompression
from optimizer.context.strategies.offload_preview import OffloadPreview
from optimizer.context.strategies.oracle import Oracle
from optimizer.registry import Registry

STRATEGIES: Registry[ContextStrategy] = Registry("acon.strategies", ContextStrategy, what="strategy")
if TYPE_CHECKING:  # a type checker sees the base; pydantic validates against the union built at run time
    StrategyConfig: TypeAlias = ContextStrategy
else:
    StrategyConfig = STRATEGIES.union()

STRATEGY_CLASSES: tuple[type[ContextStrategy], ...] = get_args(get_args(StrategyConfig)[0])
STRATEGY_NAMES = tuple(cls.model_fields["type"].default for cls in STRATEGY_CLASSES)
# Fixed strategies that need no model: every baseline a learned guideline must beat for free.
DETERMINISTIC = tuple(n for cls, n in zip(STRATEGY_CLASSES, STRATEGY_NAMES, strict=True) if cls.kind == "baseline")
LLM_BASELINES = tuple(n for cls, n in zip(STRATEGY_CLASSES, STRATEGY_NAMES, strict=True) if cls.kind == "llm_baseline")

_ADAPTER: TypeAdapter[ContextStrategy] = TypeAdapter(StrategyConfig)


def parse_strategy(data: dict[str, Any] | str) -> ContextStrategy:
    """Build a strategy from a config mapping, or from a bare name with default settings."""
    if isinstance(data, str):
        data = {"type": data}
    return _ADAPTER.validate_python(data)


__all__ = [
    "DETERMINISTIC",
    "LLM_BASELINES",
    "STRATEGIES",
    "STRATEGY_CLASSES",
    "STRATEGY_NAMES",
    "ClearToolUses",
    "Condensation",
    "ContextStrategy",
    "Fifo",
    "GuidelineStrategy",
    "LlmHistory",
    "LlmObservation",
    "MaskLastN",
    "NoCompression",
    "OffloadPreview",
    "Oracle",
    "StrategyConfig",
    "StrategyContext",
    "Written",
    "parse_strategy",
]
