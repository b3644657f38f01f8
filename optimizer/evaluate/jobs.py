"""`acon run` and `acon compare` as library calls: config in, episodes and summaries out."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optimizer.agent.episode import Episode, summarize_episodes
from optimizer.config import ExperimentConfig
from optimizer.context.strategies import parse_strategy
from optimizer.context.strategies.base import ContextStrategy
from optimizer.errors import ConfigError
from optimizer.evaluate.endpoints import ModelEndpoints
from optimizer.evaluate.runner import AgentSpec, OnEpisode, run_key, run_tasks
from optimizer.evaluate.stats import bootstrap_ci
from optimizer.world.task import Task


@dataclass
class RunResult:
    strategy: ContextStrategy
    directory: Path
    episodes: list[Episode]
    summary: dict[str, Any]


def select_tasks(config: ExperimentConfig, split: str, limit: int | None) -> list[Task]:
    suite = config.suite.load()
    tasks = suite.split(split)  # type: ignore[arg-type]
    if limit is not None:
        tasks = tasks[:limit]
    if not tasks:
        raise ConfigError(f"suite {suite.name!r} has no tasks in split {split!r}")
    return tasks


def strategy_named(config: ExperimentConfig, name: str | None) -> ContextStrategy:
    """The config's strategy, or a named one (taking the config's settings when the type matches)."""
    if name is None or name == config.strategy.type:
        return config.strategy
    if name == "guideline" or name == "seed":
        return parse_strategy({"type": "guideline", "guideline": config.guideline})
    if name in ("llm_history", "llm_observation"):
        return parse_strategy({"type": name, "guideline": config.guideline})
    try:
        return parse_strategy(name)
    except Exception as exc:  # pydantic's union error is long; the CLI wants one line
        raise ConfigError(f"unknown strategy {name!r}") from exc


def endpoint_roles(config: ExperimentConfig, strategies: Sequence[ContextStrategy], agent: str) -> dict:
    roles = {}
    if agent == "llm":
        roles["agent"] = config.endpoints.agent
    if any(s.uses_compressor for s in strategies):
        roles["compressor"] = config.endpoints.compressor
    return roles


@dataclass(frozen=True)
class RunPlan:
    """Where a run's episodes live and what its `meta.json` says: same inputs, same directory."""

    key: str
    directory: Path
    meta: dict[str, Any]


def plan_run(
    config: ExperimentConfig, tasks: Sequence[Task], strategy: ContextStrategy, *, agent: str, split: str,
    base: Path | None = None,
) -> RunPlan:
    spec = AgentSpec(agent, config.run.action_format)
    roles = {k: v.describe() for k, v in endpoint_roles(config, [strategy], agent).items()}
    key = run_key(config.suite.fingerprint(), split, [t.id for t in tasks], strategy.model_dump(mode="json"),
                  spec.identity(roles), roles.get("compressor"))
    directory = (base or config.out_dir / "runs") / f"{strategy.type}-{agent}-{split}-{key}"
    meta = {
        "key": key, "experiment": config.name, "strategy": strategy.label(), "strategy_config":
        strategy.model_dump(mode="json"), "agent": agent, "split": split, "tasks": [t.id for t in tasks],
        "endpoints": roles,
    }
    return RunPlan(key, directory, meta)


def run_strategy(
    config: ExperimentConfig,
    tasks: Sequence[Task],
    strategy: ContextStrategy,
    *,
    agent: str,
    endpoints: ModelEndpoints | None,
    split: str,
    on_episode: OnEpisode | None = None,
    base: Path | None = None,
) -> RunResult:
    plan = plan_run(config, tasks, strategy, agent=agent, split=split, base=base)
    episodes = run_tasks(
        tasks, strategy, AgentSpec(agent, config.run.action_format), endpoints=endpoints, directory=plan.directory,
        meta=plan.meta, concurrency=config.run.concurrency, max_total_steps=config.run.max_total_steps,
        on_episode=on_episode,
    )
    return RunResult(strategy, plan.directory, episodes, summarize(episodes))


def summarize(episodes: Sequence[Episode]) -> dict[str, Any]:
    summary = summarize_episodes(episodes)
    scored = [1.0 if e.success else 0.0 for e in episodes if e.outcome != "infra_error"]
    summary["success_ci"] = list(bootstrap_ci(scored))
    return summary


def episode_row(episode: Episode) -> dict[str, Any]:
    """The per-episode interface other tools read (`--json`)."""
    m = episode.metrics
    return {
        "task_id": episode.task_id, "success": episode.success, "outcome": episode.outcome,
        "steps": m["steps"], "peak_tokens": m["peak_tokens"], "dependency": m["dependency"],
        "total_tokens": m["total_tokens"], "cost": m["cost"], "wall_s": m["wall_s"],
        "agent_tokens": m["agent_tokens"], "compressor_tokens": m["compressor_tokens"],
        "recall_calls": m["recall_calls"], "duplicate_writes": m["duplicate_writes"],
        "cache_breaks": m["cache_breaks"], "token_source": m["token_source"],
        "reasons": episode.reasons, "error": episode.error,
    }


def endpoints_for(config: ExperimentConfig, strategies: Sequence[ContextStrategy], agent: str,
                  log: Callable[[str], None]) -> ModelEndpoints | None:
    roles = endpoint_roles(config, strategies, agent)
    return ModelEndpoints(roles, log=log) if roles else None
