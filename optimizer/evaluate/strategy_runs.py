"""`acon run` and `acon compare` as library calls: config in, episodes and summaries out."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optimizer.agent.episode import Episode, summarize_episodes
from optimizer.agent.kinds import AGENTS
from optimizer.context.strategies import STRATEGIES, parse_strategy
from optimizer.context.strategies.base import ContextStrategy
from optimizer.errors import ConfigError, EndpointError
from optimizer.evaluate.bill import summarize_bills, with_bills
from optimizer.evaluate.codec import RUN_FORMAT
from optimizer.evaluate.endpoints import ModelEndpoints
from optimizer.evaluate.records import EpisodeRecords, EpisodeSummary, summaries_of
from optimizer.evaluate.reuse import KeyFor, same_run_elsewhere
from optimizer.evaluate.runner import AgentSpec, OnEpisode, run_key, run_tasks
from optimizer.stats import bootstrap_ci
from optimizer.world.suite import task_ids
from optimizer.world.task import Task

if TYPE_CHECKING:
    from optimizer.config import ExperimentConfig


@dataclass
class RunResult:
    strategy: ContextStrategy
    directory: Path
    # Read from the run directory on access; `episodes.summaries` is what stays in memory.
    episodes: EpisodeRecords
    summary: dict[str, Any]

    def scored_episodes(self) -> list[Episode]:
        """Every episode, in task order, for a caller that must not score an outage as a failure.

        An infrastructure error (the endpoint down, a malformed reply) says nothing about the strategy, so it
        ends the caller in one line instead of entering a success rate.
        """
        out = []
        for summary in self.episodes.summaries:
            if summary.outcome == "infra_error":
                raise EndpointError(f"infrastructure error on {summary.task_id}: {summary.error}")
            episode = self.episodes.get(summary.task_id)
            assert episode is not None
            out.append(episode)
        return out


def select_tasks(config: ExperimentConfig, split: str, limit: int | None) -> list[Task]:
    suite = config.suite.load()
    tasks = suite.split(split)  # type: ignore[arg-type]
    if limit is not None:
        tasks = tasks[:limit]
    if not tasks:
        raise ConfigError(f"suite {suite.name!r} has no tasks in split {split!r}")
    return list(tasks)


def strategy_named(config: ExperimentConfig, name: str | None) -> ContextStrategy:
    """The config's strategy, a named one (taking the config's settings when the type matches), or a guideline
    file (`guidelines/learned/builtin.md`: a guideline learned on another suite, as a baseline or a start)."""
    if name is None or name == config.strategy.type:
        return config.strategy
    if is_guideline_file(name):
        from optimizer.context.guideline import read_guideline
        from optimizer.context.strategies.guideline import GuidelineStrategy

        return GuidelineStrategy(guideline=read_guideline(name))
    if name == "seed":
        name = "guideline"
    cls = STRATEGIES.get(name)  # an unknown name: one line listing every registered one
    # A strategy that reads a guideline file (its instructions, or the whole guideline) reads the config's.
    if "guideline" in cls.model_fields:
        return parse_strategy({"type": name, "guideline": config.guideline})
    return parse_strategy(name)


def is_guideline_file(name: str) -> bool:
    return name.endswith(".md")


def check_tier(strategy: ContextStrategy, agent: str) -> None:
    """The oracle reads the task's reference solution, which only the tier-0 reference agent has (a ceiling, which
    asks what the real agent does with perfect content, excepted)."""
    if strategy.kind == "oracle" and not strategy.tier1_ceiling and not AGENTS.get(agent).reads_reference:
        raise ConfigError("the oracle reads each task's reference solution: it runs at tier 0 only (--agent reference)")


def endpoint_roles(config: ExperimentConfig, strategies: Sequence[ContextStrategy], agent: str) -> dict:
    roles = {}
    if AGENTS.get(agent).uses_model:
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
    key_for: KeyFor  # the key this run would have over another task list

    def elsewhere(self) -> tuple[Path, ...]:
        """This run's directories over other task lists, whose episodes it may borrow."""
        return same_run_elsewhere(self.directory, self.key_for)


def plan_run(
    config: ExperimentConfig,
    tasks: Sequence[Task],
    strategy: ContextStrategy,
    *,
    agent: str,
    split: str,
    base: Path | None = None,
) -> RunPlan:
    spec = AgentSpec(agent, config.run.action_format, config.run.recall, config.run.recall_probability)
    roles = {k: v.identity() for k, v in endpoint_roles(config, [strategy], agent).items()}
    # The strategy by content (`version()`: a guideline file's hash, not its path), so an edited file never
    # reads back episodes recorded under its old text; and the code that recorded them.
    code = code_version()
    fingerprint, identity = config.suite.fingerprint(), spec.identity(roles)

    def key_for(ids: Sequence[str]) -> str:
        return run_key(
            fingerprint,
            split,
            list(ids),
            strategy.type,
            strategy.label(),
            strategy.version(),
            identity,
            roles.get("compressor"),
            code,
            *_run_settings(config),
            *_recall_listing(strategy),
        )

    key = key_for(task_ids(tasks))
    directory = (base or config.out_dir / "runs") / f"{strategy.type}-{agent}-{split}-{key}"
    meta = {
        "key": key,
        "experiment": config.name,
        "strategy": strategy.label(),
        "strategy_version": strategy.version(),
        "strategy_config": strategy.model_dump(mode="json"),
        "agent": agent,
        "split": split,
        "tasks": task_ids(tasks),
        "endpoints": roles,
        "code": code,
    }
    return RunPlan(key, directory, meta, key_for)


def _run_settings(config: ExperimentConfig) -> list[dict[str, Any]]:
    """The `[run]` settings that change an episode, beyond the agent's identity: each only when it differs
    from its default, so the keys of runs recorded before it was keyed stay the same."""
    settings = {
        name: getattr(config.run, name)
        for name in ("max_total_steps",)
        if getattr(config.run, name) != type(config.run).model_fields[name].default
    }
    return [settings] if settings else []


def _recall_listing(strategy: ContextStrategy) -> list[dict[str, Any]]:
    """How the episodes list `recall`, for a strategy that offers it only once a result is cleared behind a
    handle: runs recorded before that listing existed listed it from the first request, and are never read back
    as these (their guideline's version is the same). Strategies that never offer it record the same episodes
    either way, and `always` changes the guideline's version itself."""
    if strategy.offers_recall and strategy.recall_tool == "once_cleared":
        return [{"recall_tool": "once_cleared"}]
    return []


def code_version() -> dict[str, Any]:
    """What of the code a run's key includes: the package version and `RUN_FORMAT`.

    Not a hash of the source: any edit (a comment, a test helper) would orphan every stored run, and a
    benchmark's episodes would never be reused across commits. A change that alters what an episode records
    or how it is scored bumps `RUN_FORMAT` instead.
    """
    try:
        version = importlib.metadata.version("acon")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that was never installed
        from optimizer import __version__ as version
    return {"acon": version, "run_format": RUN_FORMAT}


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
    check_tier(strategy, agent)
    strategy = strategy.fixed()  # keyed and run by one version, whatever happens to its file meanwhile
    plan = plan_run(config, tasks, strategy, agent=agent, split=split, base=base)
    episodes = run_tasks(
        tasks,
        strategy,
        AgentSpec(agent, config.run.action_format, config.run.recall, config.run.recall_probability),
        endpoints=endpoints,
        directory=plan.directory,
        meta=plan.meta,
        elsewhere=plan.elsewhere,
        concurrency=config.run.concurrency,
        max_total_steps=config.run.max_total_steps,
        on_episode=on_episode,
        executor=config.run.executor,
    )
    episodes = with_bills(episodes, config.cost)
    return RunResult(strategy, plan.directory, episodes, summarize(episodes, config.cost.primary))


def summarize(episodes: Sequence[Episode] | EpisodeRecords, cost_model: str | None = None) -> dict[str, Any]:
    """Run-level figures. Where no endpoint priced the run (tier 0, or no prices configured), the cost per
    success is the bill projected under `cost_model`, and `cost_source` says so."""
    outcomes = summaries_of(episodes)  # a run's summaries: the records stay on disk
    summary = summarize_episodes(outcomes)
    scored = [1.0 if e.success else 0.0 for e in outcomes if e.outcome != "infra_error"]
    summary["success_ci"] = list(bootstrap_ci(scored))
    summary.update(summarize_bills(outcomes, cost_model))
    summary["cost_source"] = "measured"
    projected = summary.get("projected", {}).get(cost_model)
    if not summary["cost"] and projected is not None:
        summary["cost_per_success"] = projected["cost_per_success"]
        summary["cost_source"] = f"projected ({cost_model})"
    return summary


def episode_row(episode: Episode | EpisodeSummary) -> dict[str, Any]:
    """The per-episode interface other tools read (`--json`)."""
    m = episode.metrics
    return {
        "task_id": episode.task_id,
        "success": episode.success,
        "outcome": episode.outcome,
        "steps": m.steps,
        "peak_tokens": m.peak_tokens,
        "dependency": m.dependency,
        "total_tokens": m.total_tokens,
        "cost": m.cost,
        # Under the run's headline price model: bills are projected onto a run's summaries, not episodes.
        "projected_cost": episode.projected_cost if isinstance(episode, EpisodeSummary) else None,
        "wall_s": m.wall_s,
        "agent_tokens": m.agent_tokens,
        "compressor_tokens": m.compressor_tokens,
        "recall_calls": m.recall_calls,
        "duplicate_writes": m.duplicate_writes,
        "cache_breaks": m.cache_breaks,
        "token_source": m.token_source,
        "reasons": episode.reasons,
        "error": episode.error,
    }


def endpoints_for(
    config: ExperimentConfig, strategies: Sequence[ContextStrategy], agent: str, log: Callable[[str], None]
) -> ModelEndpoints | None:
    roles = endpoint_roles(config, strategies, agent)
    return ModelEndpoints(roles, log=log) if roles else None
