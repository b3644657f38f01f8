"""Run tasks under one strategy with one agent, concurrently, recording each episode as it ends."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from optimizer.agent.base import Agent
from optimizer.agent.episode import Episode
from optimizer.agent.llm import LlmAgent
from optimizer.agent.loop import EpisodeServices, run_episode
from optimizer.agent.reference import RecallMode, ReferenceAgent
from optimizer.context.compressor import Compressor
from optimizer.context.strategies.base import ContextStrategy
from optimizer.errors import ConfigError
from optimizer.evaluate.endpoints import ModelEndpoints
from optimizer.evaluate.store import EpisodeStore, read_meta, write_meta
from optimizer.locking import exclusive
from optimizer.world.sources import need_sources
from optimizer.world.task import Task

OnEpisode = Callable[[Episode], None]
BUSY_HINT = "wait for it to finish; the episodes it records are reused when you rerun"


@dataclass(frozen=True)
class AgentSpec:
    """Which agent runs the episodes: `reference` (tier 0) or `llm` (tier 1)."""

    kind: str
    action_format: str = "auto"
    # Tier 0: how the reference agent recalls (see `optimizer.agent.reference`).
    recall: RecallMode = "honest"

    def build(self, task: Task, endpoints: ModelEndpoints | None) -> Agent:
        if self.kind == "reference":
            if task.reference is None:
                raise ConfigError(f"task {task.id} has no reference solution; the reference agent cannot run it")
            sources = need_sources(task) if self.recall == "honest" else {}
            return ReferenceAgent(task.reference, sources=sources, recall_mode=self.recall)
        if endpoints is None:
            raise ConfigError("the llm agent needs an agent endpoint")
        client = endpoints.client("agent")
        native = client.config.native_tools if self.action_format == "auto" else self.action_format == "native"
        return LlmAgent(client, native=native)

    def identity(self, endpoints_config: dict) -> dict:
        if self.kind == "reference":
            return {"agent": "reference", "recall": self.recall}
        return {"agent": "llm", "format": self.action_format, "endpoint": endpoints_config.get("agent")}


def run_key(*parts: object) -> str:
    payload = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:10]


def services_for(strategy: ContextStrategy, agent: AgentSpec, endpoints: ModelEndpoints | None) -> EpisodeServices:
    compressor = None
    compressor_pricing = None
    if strategy.uses_compressor:
        if endpoints is None:
            raise ConfigError(f"strategy {strategy.type} needs a compressor endpoint")
        client = endpoints.client("compressor")
        compressor = Compressor(client, endpoints.response_cache())
        compressor_pricing = client.config.pricing
    agent_pricing = None
    system_tokens = None
    if agent.kind == "llm" and endpoints is not None:
        client = endpoints.client("agent")
        agent_pricing = client.config.pricing
        system_tokens = client.system_tokens
    return EpisodeServices(
        compressor=compressor, agent_pricing=agent_pricing, compressor_pricing=compressor_pricing,
        system_tokens=system_tokens,
    )


def run_tasks(
    tasks: Sequence[Task],
    strategy: ContextStrategy,
    agent: AgentSpec,
    *,
    endpoints: ModelEndpoints | None,
    directory: Path,
    meta: dict,
    concurrency: int = 1,
    max_total_steps: int = 200,
    on_episode: OnEpisode | None = None,
) -> list[Episode]:
    """Episodes for `tasks`, reusing any already recorded in `directory` (a killed run resumes).

    An episode that ended in an infrastructure error is not reused: its task runs again and the new record
    supersedes it (the newest record of a task counts), so a flaky endpoint never leaves a hole in a run.
    Only one process at a time runs in `directory` (`DirectoryBusy` for a second one).
    """
    with exclusive(directory, hint=BUSY_HINT):
        return _run_locked(tasks, strategy, agent, endpoints=endpoints, directory=directory, meta=meta,
                           concurrency=concurrency, max_total_steps=max_total_steps, on_episode=on_episode)


def _run_locked(
    tasks: Sequence[Task], strategy: ContextStrategy, agent: AgentSpec, *, endpoints: ModelEndpoints | None,
    directory: Path, meta: dict, concurrency: int, max_total_steps: int, on_episode: OnEpisode | None,
) -> list[Episode]:
    store = EpisodeStore(directory)
    existing = read_meta(directory)
    if existing is not None and existing.get("key") != meta.get("key"):
        raise ConfigError(f"{directory} holds episodes of a different run (key {existing.get('key')})")
    write_meta(directory, meta)
    wanted = {t.id for t in tasks}
    done = {e.task_id: e for e in store.load() if e.outcome != "infra_error" and e.task_id in wanted}
    for episode in done.values():
        if on_episode is not None:
            on_episode(episode)
    todo = [t for t in tasks if t.id not in done]
    services = services_for(strategy, agent, endpoints) if todo else None
    if services is not None:
        services.max_total_steps = max_total_steps

    def one(task: Task) -> Episode:
        compressor = services.compressor if services is not None else None
        attempt = compressor.attempt(f"{directory.resolve()}::{task.id}") if compressor else contextlib.nullcontext()
        with attempt:
            episode = run_episode(task, agent.build(task, endpoints), strategy, services)
        store.append(episode)
        return episode

    results = dict(done)
    if concurrency <= 1:
        for task in todo:
            episode = one(task)
            results[task.id] = episode
            if on_episode is not None:
                on_episode(episode)
    else:
        pool = ThreadPoolExecutor(max_workers=concurrency)
        try:
            futures = {pool.submit(one, task): task for task in todo}
            for future in as_completed(futures):
                episode = future.result()
                results[episode.task_id] = episode
                if on_episode is not None:
                    on_episode(episode)
        except BaseException:
            # Ctrl-C, SIGTERM or a failed episode: episodes not started yet are dropped (a resumed run does
            # them), the ones in flight finish and are stored. A `with` block would run every queued one.
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown()
    return [results[t.id] for t in tasks]
