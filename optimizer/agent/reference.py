"""`reference`: a deterministic, context-faithful agent for tasks with a reference solution.

It walks the reference solution, but takes a step as written only if every literal the step needs is
visible in the request it was actually sent. Otherwise it does what an agent without that fact does:
guesses a value, skips the gated step, stops at page one, or repeats a write it cannot see happened.
When the missing fact sits in a cleared result whose recall placeholder *is* visible, it recalls it
first, as a capable agent would. It costs no model tokens, so screening costs only compressor calls.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from optimizer.agent.base import Agent, AgentAction, AgentInput
from optimizer.agent.render import request_text
from optimizer.context.recall import RECALL_TOOL
from optimizer.world.provenance import occurs
from optimizer.world.task import Need, NeedKind, ReferenceStep
from optimizer.world.tool import ToolCall, ToolSpec

_HANDLE = re.compile(r'recall\(handle="(h\d+)"\)')
SKIPPING_KINDS = (NeedKind.RULE, NeedKind.PAGE, NeedKind.ERROR)


@dataclass(frozen=True)
class Deviation:
    """A point where the context made the reference agent depart from the reference solution."""

    step: int
    reference_index: int
    need: Need
    behaviour: str  # guess | skip | repeat

    def to_dict(self) -> dict:
        return {
            "step": self.step, "reference_index": self.reference_index, "kind": self.need.kind.value,
            "literal": self.need.literal, "behaviour": self.behaviour, "source_class": self.need.source_class,
        }


@dataclass
class ReferenceAgent(Agent):
    reference: Sequence[ReferenceStep]
    cursor: int = 0
    repeated: set[int] = field(default_factory=set)
    recalled: set[str] = field(default_factory=set)
    deviations: list[Deviation] = field(default_factory=list)
    made: set[str] = field(default_factory=set)
    _ids: int = 0

    name = "reference"
    uses_model = False

    def system_prompt(self, tools: Sequence[ToolSpec]) -> str:
        names = ", ".join(t.name for t in tools)
        return f"Reference agent replaying a known solution. Tools: {names}."

    def act(self, agent_input: AgentInput) -> AgentAction:
        text = request_text(agent_input.messages)
        while self.cursor < len(self.reference) and self.reference[self.cursor].turn == agent_input.turn:
            index = self.cursor
            step = self.reference[index]
            missing = [n for n in step.needs if not occurs(n.literal, text)]
            recall = self._recall_for(missing, text, agent_input)
            if recall is not None:
                return recall
            skip = next((n for n in missing if n.kind in SKIPPING_KINDS), None)
            if skip is not None:
                self.deviations.append(Deviation(agent_input.step, index, skip, "skip"))
                self.cursor += 1
                continue
            # Only a write the agent actually made can be repeated; a skipped one stays skipped.
            receipt = next(
                (n for n in missing if n.kind is NeedKind.RECEIPT and n.repeat is not None
                 and n.repeat.signature() in self.made),
                None,
            )
            if receipt is not None and index not in self.repeated:
                self.repeated.add(index)
                self.deviations.append(Deviation(agent_input.step, index, receipt, "repeat"))
                return AgentAction(calls=(self._call(receipt.repeat.name, dict(receipt.repeat.arguments)),))
            self.cursor += 1
            guesses = [n for n in missing if n.kind is NeedKind.VALUE]
            for need in guesses:
                self.deviations.append(Deviation(agent_input.step, index, need, "guess"))
            if step.call is None:
                # An answer-step VALUE need's literal must appear verbatim in `step.answer`: the agent
                # that cannot see it writes the guess in its place.
                answer = step.answer or ""
                for need in guesses:
                    answer = answer.replace(need.literal, str(need.guess)) if need.argument is None else answer
                return AgentAction(answer=answer)
            arguments = dict(step.call.arguments)
            for need in guesses:
                if need.argument is not None:
                    arguments[need.argument] = need.guess
            return AgentAction(calls=(self._call(step.call.name, arguments),))
        # Out of reference steps for this turn: finish it.
        return AgentAction(answer="")

    def _recall_for(self, missing: list[Need], text: str, agent_input: AgentInput) -> AgentAction | None:
        if not missing:
            return None
        for handle in _HANDLE.findall(text):
            if handle in self.recalled:
                continue
            content = agent_input.recall(handle)
            if content is not None and any(occurs(n.literal, content) for n in missing):
                self.recalled.add(handle)
                return AgentAction(calls=(self._call(RECALL_TOOL, {"handle": handle}),))
        return None

    def _call(self, name: str, arguments: dict) -> ToolCall:
        self._ids += 1
        call = ToolCall(f"ref_{self._ids}", name, arguments)
        self.made.add(call.signature())
        return call

    def replace_reference(self, reference: Sequence[ReferenceStep]) -> ReferenceAgent:
        return dataclasses.replace(self, reference=reference)
