"""The agent interface: rendered context in, one action out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from optimizer.agent.episode_records import DeviationRecord
from optimizer.llm.usage import Usage
from optimizer.world.tool import ToolCall, ToolSpec


@dataclass(frozen=True)
class AgentAction:
    """Tool calls, or a final answer for the current user turn, or a reply that could not be parsed."""

    calls: tuple[ToolCall, ...] = ()
    answer: str | None = None
    malformed: str | None = None
    raw: str = ""
    usage: Usage | None = None
    latency_s: float = 0.0
    attempts: int = 1
    request: Mapping[str, Any] | None = field(default=None, repr=False)

    @property
    def is_finish(self) -> bool:
        return self.answer is not None and not self.calls


@dataclass(frozen=True)
class AgentInput:
    """Everything an agent gets for one step: the request as it will be sent, nothing more."""

    messages: Sequence[Mapping[str, Any]]
    tools: Sequence[ToolSpec]
    turn: int
    step: int
    # Restores a cleared result by handle; only for handles visible in `messages`.
    recall: Callable[[str], str | None] = field(default=lambda handle: None, repr=False)


class Agent(ABC):
    """One agent instance runs one episode (it may keep per-episode state)."""

    name: str = "agent"
    uses_model: bool = True

    @abstractmethod
    def system_prompt(self, tools: Sequence[ToolSpec]) -> str:
        """The fixed instructions sent first; excluded from peak tokens."""

    @abstractmethod
    def act(self, agent_input: AgentInput) -> AgentAction:
        """Decide the next action. Model failures raise `InfrastructureError`; bad replies are `malformed`."""

    def native_tools(self) -> bool:
        return False

    def deviation_records(self) -> list[DeviationRecord]:
        """Where this episode's agent departed from a known solution, for the episode record (none: [])."""
        return []

    def fact_visibility(self) -> tuple[int, int] | None:
        """(facts needed, facts the request showed when their step came), or None: this agent cannot tell."""
        return None
