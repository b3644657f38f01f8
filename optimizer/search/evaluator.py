"""The evaluator: (strategy, tasks, split, tier) in, scores out.

Every evaluation is a run directory keyed by what was run (strategy content, tasks, agent, endpoints,
code), so asking again for the same evaluation reads it back instead of running it, and a killed job
resumes mid-run. Searches, selection and the report all score through this one object.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from optimizer.agent.episode import Episode
from optimizer.context.strategies.base import ContextStrategy
from optimizer.evaluate.endpoints import ModelEndpoints
from optimizer.evaluate.records import EpisodeRecords
from optimizer.evaluate.scores import Scores
from optimizer.evaluate.strategy_runs import RunResult, run_strategy
from optimizer.world.task import Task

if TYPE_CHECKING:
    from optimizer.config import ExperimentConfig

OnEpisode = Callable[[Episode], None]
Progress = Callable[[str, int], contextlib.AbstractContextManager[OnEpisode]]
# (result, agent, split, tasks): every evaluation, a cached one read back included.
OnRun = Callable[[RunResult, str, str, Sequence[Task]], None]


@dataclass(frozen=True)
class Evaluation:
    result: RunResult
    scores: Scores

    @property
    def episodes(self) -> EpisodeRecords:
        return self.result.episodes


class Evaluator:
    def __init__(
        self,
        config: ExperimentConfig,
        endpoints: ModelEndpoints | None,
        base: Path,
        *,
        progress: Progress | None = None,
        on_run: OnRun | None = None,
    ) -> None:
        self.config = config
        self.endpoints = endpoints
        self.base = base
        self.progress = progress
        self.on_run = on_run

    def evaluate(
        self,
        strategy: ContextStrategy,
        tasks: Sequence[Task],
        split: str,
        agent: str,
        *,
        seed: int | None = None,
        temperature: float = 0.3,
    ) -> Evaluation:
        """One run. `seed` (tier 1): the agent samples with that seed at `temperature`, a repeat that differs
        from the others only by it (its own run directory, the same warm server)."""
        config, endpoints = self.config, self.endpoints
        if seed is not None:
            agent_config = config.endpoints.agent.model_copy(update={"seed": seed, "temperature": temperature})
            config = config.with_overrides(endpoints={"agent": agent_config.model_dump(mode="python")})
            if endpoints is not None:
                endpoints = endpoints.reconfigured("agent", config.endpoints.agent)
        label = f"{strategy.label()} [{agent}, {split}, {len(tasks)} tasks{f', seed {seed}' if seed else ''}]"
        progress = self.progress(label, len(tasks)) if self.progress else contextlib.nullcontext(None)
        with progress as advance:
            result = run_strategy(
                config,
                tasks,
                strategy,
                agent=agent,
                endpoints=endpoints,
                split=split,
                on_episode=advance,
                base=self.base,
            )
        if self.on_run is not None:
            self.on_run(result, agent, split, tasks)
        return Evaluation(result, Scores.of(result.episodes.summaries, result.summary, str(result.directory)))

    def pooled(self, strategy: ContextStrategy, tasks: Sequence[Task], split: str, agent: str, seeds: int) -> Scores:
        """`repeated` runs as one set of scores (`Scores.pooled`): what a report row over several seeds shows."""
        return Scores.pooled([run.scores for run in self.repeated(strategy, tasks, split, agent, seeds)])

    def repeated(
        self,
        strategy: ContextStrategy,
        tasks: Sequence[Task],
        split: str,
        agent: str,
        repeats: int,
        temperature: float = 0.3,
    ) -> list[Evaluation]:
        """`repeats` runs of the same tasks, each with its own sampling seed (one run, as configured, for 1)."""
        if repeats <= 1:
            return [self.evaluate(strategy, tasks, split, agent)]
        return [
            self.evaluate(strategy, tasks, split, agent, seed=seed, temperature=temperature)
            for seed in range(1, repeats + 1)
        ]
