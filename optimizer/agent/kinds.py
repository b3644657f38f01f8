"""Which agent runs the episodes: one config class per kind of agent, `AgentConfig` their union by `type`.

Each kind says what the run needs to know about it without building one (does it call the agent model,
may it read a task's reference solution) and builds a fresh agent per episode. acon's kinds are `llm`
(tier 1) and `reference` (tier 0); a package adds one with an entry point in the `acon.agents` group.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from optimizer.agent.base import Agent
from optimizer.agent.llm import LlmAgent
from optimizer.agent.reference import RecallMode, ReferenceAgent
from optimizer.errors import ConfigError
from optimizer.registry import Registry
from optimizer.world.needs import NEEDS_MATCHING
from optimizer.world.sources import need_sources
from optimizer.world.task import Task

if TYPE_CHECKING:
    from optimizer.evaluate.endpoints import ModelEndpoints


class AgentKind(BaseModel, ABC):
    """Base of every agent kind: `type` selects it, the other fields are the run options it reads."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str

    # Calls the `agent` endpoint (its tokens and cost are counted, the endpoint is started for it).
    uses_model: ClassVar[bool] = True
    # Reads each task's reference solution, so strategies that do too (the oracle) may run beside it.
    reads_reference: ClassVar[bool] = False
    # The evaluation tier its episodes are reported under (0: no agent model; 1: a real agent).
    tier: ClassVar[int] = 1

    @abstractmethod
    def build(self, task: Task, endpoints: ModelEndpoints | None) -> Agent:
        """A fresh agent for one episode of `task`. Raises `ConfigError` when it cannot run that task."""

    @abstractmethod
    def identity(self, endpoint: dict | None) -> dict[str, Any]:
        """What of it decides the episodes it records (part of a run's key): same identity, same episodes."""


class LlmAgentConfig(AgentKind):
    """A tool-calling agent over the `agent` endpoint (tier 1)."""

    type: Literal["llm"] = "llm"
    action_format: Literal["auto", "native", "json"] = Field(
        "auto", description="`auto`: native tool calls if the agent endpoint declares them, else JSON."
    )

    def build(self, task: Task, endpoints: ModelEndpoints | None) -> Agent:
        if endpoints is None:
            raise ConfigError("the llm agent needs an agent endpoint")
        client = endpoints.client("agent")
        native = client.config.native_tools if self.action_format == "auto" else self.action_format == "native"
        return LlmAgent(client, native=native)

    def identity(self, endpoint: dict | None) -> dict[str, Any]:
        return {"agent": "llm", "format": self.action_format, "endpoint": endpoint}


class ReferenceAgentConfig(AgentKind):
    """The deterministic, context-faithful replay of each task's reference solution (tier 0)."""

    type: Literal["reference"] = "reference"
    uses_model: ClassVar[bool] = False
    reads_reference: ClassVar[bool] = True
    tier: ClassVar[int] = 0
    recall: RecallMode = Field("honest", description="How it recalls cleared results (`optimizer.agent.reference`).")
    recall_probability: float = Field(1.0, ge=0.0, le=1.0, description="Share of the honest recalls it makes.")

    def build(self, task: Task, endpoints: ModelEndpoints | None) -> Agent:
        if task.reference is None:
            raise ConfigError(f"task {task.id} has no reference solution; the reference agent cannot run it")
        sources = need_sources(task) if self.recall == "honest" else {}
        return ReferenceAgent(
            task.reference,
            sources=sources,
            recall_mode=self.recall,
            recall_probability=self.recall_probability,
            task_id=task.id,
        )

    def identity(self, endpoint: dict | None) -> dict[str, Any]:
        # The reference agent acts on what `occurs` finds visible: since a number named by its JSON key also counts
        # rewritten under that key (`optimizer.world.needs`), episodes recorded before would read back as these.
        identity: dict[str, Any] = {"agent": "reference", "recall": self.recall, "matching": NEEDS_MATCHING}
        if self.recall_probability != 1.0:  # only when set, so runs recorded before it keep their key
            identity["recall_probability"] = self.recall_probability
        return identity


AGENTS: Registry[AgentKind] = Registry("acon.agents", AgentKind, what="agent")


def agent_kind(name: str, **options: Any) -> AgentKind:
    """The kind registered as `name`, given the run options it declares (the others are not its concern)."""
    cls = AGENTS.get(name)
    return cls(**{key: value for key, value in options.items() if key in cls.model_fields})
