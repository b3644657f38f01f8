"""Executors: where episodes run. `ExecutorConfig` is the union keyed by `type`; a bare name also works
(`[run] executor = "ray"`), and a table sets the options (`[run.executor] type = "ray"`, `address = "auto"`).

Adding one: a module with one `Executor` subclass and one entry in the union.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from optimizer.evaluate.executors.base import EpisodeWork, Executor
from optimizer.evaluate.executors.local import LocalExecutor, bounded_map
from optimizer.evaluate.executors.ray import RayExecutor


def _by_name(value: Any) -> Any:
    return {"type": value} if isinstance(value, str) else value


ExecutorConfig = Annotated[LocalExecutor | RayExecutor, Field(discriminator="type"), BeforeValidator(_by_name)]

__all__ = ["EpisodeWork", "Executor", "ExecutorConfig", "LocalExecutor", "RayExecutor", "bounded_map"]
