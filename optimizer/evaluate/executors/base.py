"""Where episodes run: the base every executor extends, and the work it is handed.

The runner decides which tasks still need an episode and records each one it gets back; an executor only
decides where `run_episode` happens. So resuming, superseding infrastructure errors and the records on
disk are the same whatever the executor, and a run begun on one finishes on another.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from optimizer.agent.episode import Episode
from optimizer.context.strategies.base import ContextStrategy
from optimizer.llm.endpoint import EndpointConfig
from optimizer.world.task import Task

if TYPE_CHECKING:  # its type only: `optimizer.config` loads the executors, which need not load the agent loop
    from optimizer.evaluate.services import AgentSpec


@dataclass(frozen=True)
class EpisodeWork:
    """Everything an episode needs besides its task, in a form another process can rebuild it from."""

    strategy: ContextStrategy
    agent: AgentSpec
    endpoints: dict[str, EndpointConfig]
    max_total_steps: int
    attempt_prefix: str  # the run directory: compressor calls are attributed to `<prefix>::<task id>`


class Executor(BaseModel, ABC):
    """Base of every executor's config: `type` selects it, the other fields are its settings."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str

    @abstractmethod
    def episodes(
        self,
        work: EpisodeWork,
        tasks: Sequence[Task],
        *,
        concurrency: int,
        here: Callable[[Task], Episode],
        record: Callable[[Episode], int],
    ) -> Generator[tuple[Episode, int], None, None]:
        """One episode per task as each finishes, with the offset `record` stored it at; at most
        `concurrency` at once. `here` runs one in this process with its live endpoints. Closing the
        iterator early (an interrupt) stops handing out tasks; what is already recorded stays."""
