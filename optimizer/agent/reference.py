"""`reference`: a deterministic, context-faithful agent for tasks with a reference solution.

It walks the reference solution, but takes a step as written only if every literal the step needs is
visible in the request it was actually sent. Otherwise it does what an agent without that fact does:
guesses a value, skips the gated step, stops at page one, or repeats a write it cannot see happened.
Every literal it would *write* (an id quoted in an email body or in the final answer) counts as a need
of that step too: an agent cannot quote what it cannot see, so it writes a wrong value instead.

Recall is honest (`recall="honest"`): the agent never looks inside the recall store. It recalls a handle
only when its context shows a placeholder (or a summary's index line) naming the call the missing fact
came from, by call id, and each recall costs a step and puts the recalled text back into the context.
`recall="never"` is an agent that never recalls (retrievable is not retrieved); `recall="peek"` is the
old behaviour that looked inside stored content before recalling, kept only to compare against.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from optimizer.agent.base import Agent, AgentAction, AgentInput
from optimizer.agent.episode_records import DeviationRecord
from optimizer.context.recall import RECALL_TOOL
from optimizer.runtime.render import request_text
from optimizer.world.needs import alter_text, occurs, written_needs
from optimizer.world.task import Need, NeedKind, ReferenceStep
from optimizer.world.tool import ToolCall, ToolSpec

RecallMode = Literal["honest", "never", "peek"]

_HANDLE = re.compile(r'recall\(handle="(h\d+)"\)')
_CALL_ID = re.compile(r"call_id=([A-Za-z0-9_.:-]+)")
SKIPPING_KINDS = (NeedKind.RULE, NeedKind.PAGE, NeedKind.ERROR)


@dataclass(frozen=True)
class Deviation:
    """A point where the context made the reference agent depart from the reference solution."""

    step: int
    reference_index: int
    need: Need
    behaviour: str  # guess | skip | repeat | recall (a near miss: the step went as written after a recall)

    def record(self) -> DeviationRecord:
        """What the episode keeps of it: the need flattened to its kind, literal and source class."""
        return DeviationRecord(
            self.step,
            self.reference_index,
            self.need.kind.value,
            self.need.literal,
            self.behaviour,
            self.need.source_class,
        )


@dataclass
class ReferenceAgent(Agent):
    reference: Sequence[ReferenceStep]
    # Literal -> the reference call id whose output first carried it (see `optimizer.world.sources`).
    sources: Mapping[str, str] = field(default_factory=dict)
    recall_mode: RecallMode = "honest"
    # Honest recall only: the share of the recalls it could make that it makes. A real model does not
    # always recall what it could (bench_fidelity measures how often); the draw is a hash of the task and
    # the handle, so the same run records the same episodes.
    recall_probability: float = 1.0
    task_id: str = ""
    cursor: int = 0
    repeated: set[int] = field(default_factory=set)
    recalled: set[str] = field(default_factory=set)
    deviations: list[Deviation] = field(default_factory=list)
    made: set[str] = field(default_factory=set)
    # Reference call id -> the id of the call this agent made for it.
    made_for: dict[str, str] = field(default_factory=dict)
    _ids: int = 0
    _needs: list[tuple[Need, ...]] | None = None
    # Reference step index -> (needed, visible) the first time the step came up: a later look (after a
    # recall put the fact back) is recovery, not visibility.
    _seen: dict[int, tuple[int, int]] = field(default_factory=dict)

    name = "reference"
    uses_model = False

    def deviation_records(self) -> list[DeviationRecord]:
        return [d.record() for d in self.deviations]

    def fact_visibility(self) -> tuple[int, int]:
        return sum(n for n, _ in self._seen.values()), sum(v for _, v in self._seen.values())

    def system_prompt(self, tools: Sequence[ToolSpec]) -> str:
        names = ", ".join(t.name for t in tools)
        return f"Reference agent replaying a known solution. Tools: {names}."

    def act(self, agent_input: AgentInput) -> AgentAction:
        if self._needs is None:
            self._needs = written_needs(self.reference)
        text = request_text(agent_input.messages)
        while self.cursor < len(self.reference) and self.reference[self.cursor].turn == agent_input.turn:
            index = self.cursor
            step = self.reference[index]
            missing = [n for n in self._needs[index] if not occurs(n.literal, text)]
            self._seen.setdefault(index, (len(self._needs[index]), len(self._needs[index]) - len(missing)))
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
                (
                    n
                    for n in missing
                    if n.kind is NeedKind.RECEIPT and n.repeat is not None and n.repeat.signature() in self.made
                ),
                None,
            )
            if receipt is not None and receipt.repeat is not None and index not in self.repeated:
                self.repeated.add(index)
                self.deviations.append(Deviation(agent_input.step, index, receipt, "repeat"))
                return AgentAction(calls=(self._call(receipt.repeat.name, dict(receipt.repeat.arguments)),))
            self.cursor += 1
            guesses = [n for n in missing if n.kind is NeedKind.VALUE or n.kind is NeedKind.RECEIPT]
            for need in guesses:
                self.deviations.append(Deviation(agent_input.step, index, need, "guess"))
            if step.call is None:
                # An answer-step literal must appear verbatim in `step.answer`: the agent that cannot see it
                # writes the guess in its place.
                answer = step.answer or ""
                for need in guesses:
                    answer = answer.replace(need.shown_as or need.literal, _guess_text(need))
                return AgentAction(answer=answer)
            arguments = dict(step.call.arguments)
            for need in guesses:
                if need.argument is not None and need.kind is NeedKind.VALUE:
                    arguments[need.argument] = need.guess
                else:
                    arguments = _replaced(arguments, need.shown_as or need.literal, _guess_text(need))
            return AgentAction(calls=(self._call(step.call.name, arguments, reference_id=step.call.id),))
        # Out of reference steps for this turn: finish it.
        return AgentAction(answer="")

    def _recall_for(self, missing: list[Need], text: str, agent_input: AgentInput) -> AgentAction | None:
        if not missing or self.recall_mode == "never":
            return None
        if self.recall_mode == "peek":
            return self._peek(missing, text, agent_input)
        wanted = {self.made_for[s] for n in missing if (s := self.sources.get(n.literal)) in self.made_for}
        if not wanted:
            return None
        for line in text.splitlines():
            handle = _HANDLE.search(line)
            call_id = _CALL_ID.search(line)
            if handle and call_id and call_id.group(1) in wanted and handle.group(1) not in self.recalled:
                self.recalled.add(handle.group(1))
                if not self._would_recall(handle.group(1)):
                    continue
                return self._recall(handle.group(1), missing, agent_input.step)
        return None

    def _would_recall(self, handle: str) -> bool:
        if self.recall_probability >= 1.0:
            return True
        digest = hashlib.sha256(f"{self.task_id}:{handle}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64 < self.recall_probability

    def _recall(self, handle: str, missing: list[Need], step: int) -> AgentAction:
        # On the record as a near miss: the context had lost what the step needed, and a recall paid for it.
        for need in missing:
            self.deviations.append(Deviation(step, self.cursor, need, "recall"))
        return AgentAction(calls=(self._call(RECALL_TOOL, {"handle": handle}),))

    def _peek(self, missing: list[Need], text: str, agent_input: AgentInput) -> AgentAction | None:
        for handle in _HANDLE.findall(text):
            if handle in self.recalled:
                continue
            content = agent_input.recall(handle)
            if content is not None and any(occurs(n.literal, content) for n in missing):
                self.recalled.add(handle)
                return self._recall(handle, missing, agent_input.step)
        return None

    def _call(self, name: str, arguments: dict, *, reference_id: str | None = None) -> ToolCall:
        self._ids += 1
        call = ToolCall(f"ref_{self._ids}", name, arguments)
        self.made.add(call.signature())
        if reference_id is not None:
            self.made_for.setdefault(reference_id, call.id)
        return call

    def replace_reference(self, reference: Sequence[ReferenceStep]) -> ReferenceAgent:
        return dataclasses.replace(self, reference=reference, _needs=None)


def _guess_text(need: Need) -> str:
    if need.argument is None and need.guess is not None:
        return str(need.guess)
    return alter_text(need.literal)


def _replaced(node: Any, literal: str, guess: str) -> Any:
    """`node` with `literal` replaced by `guess` in every string it holds (an email body quoting an id)."""
    if isinstance(node, str):
        return node.replace(literal, guess)
    if isinstance(node, Mapping):
        return {k: _replaced(v, literal, guess) for k, v in node.items()}
    if isinstance(node, list | tuple):
        return type(node)(_replaced(v, literal, guess) for v in node)
    return node
