"""What runs an episode besides its task and strategy: the agent, and the services built from the endpoints.

Both the runner (episodes in this process) and the executors (episodes on workers, which rebuild the
services there) use them, so they sit below both.
"""

from __future__ import annotations

from dataclasses import dataclass

from optimizer.agent.base import Agent
from optimizer.agent.kinds import AGENTS, AgentKind, agent_kind
from optimizer.agent.loop import EpisodeServices
from optimizer.agent.reference import RecallMode
from optimizer.context.compressor import Compressor
from optimizer.context.strategies.base import ContextStrategy
from optimizer.errors import ConfigError
from optimizer.evaluate.endpoints import ModelEndpoints
from optimizer.world.task import Task


@dataclass(frozen=True)
class AgentSpec:
    """Which agent runs the episodes: a registered kind (`optimizer.agent.kinds`) and the run's agent options."""

    kind: str
    action_format: str = "auto"
    # Tier 0: how the reference agent recalls (see `optimizer.agent.reference`).
    recall: RecallMode = "honest"
    recall_probability: float = 1.0

    @property
    def config(self) -> AgentKind:
        return agent_kind(
            self.kind, action_format=self.action_format, recall=self.recall, recall_probability=self.recall_probability
        )

    @property
    def uses_model(self) -> bool:
        return AGENTS.get(self.kind).uses_model

    def build(self, task: Task, endpoints: ModelEndpoints | None) -> Agent:
        return self.config.build(task, endpoints)

    def identity(self, endpoints_config: dict) -> dict:
        return self.config.identity(endpoints_config.get("agent"))


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
    if agent.uses_model and endpoints is not None:
        client = endpoints.client("agent")
        agent_pricing = client.config.pricing
        system_tokens = client.system_tokens
    return EpisodeServices(
        compressor=compressor,
        agent_pricing=agent_pricing,
        compressor_pricing=compressor_pricing,
        system_tokens=system_tokens,
    )
