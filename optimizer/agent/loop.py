"""The episode loop: strategy → replay → budget → request → agent → environment, step after step.

History (what happened) and context (what is sent) are kept apart: the loop appends to the history,
the strategy records edits, and every request is rebuilt from the history through the five
checkpoints, each snapshotted in the episode.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from optimizer.agent.base import Agent, AgentAction, AgentInput
from optimizer.agent.episode import Episode, StepRecord, compute_metrics
from optimizer.agent.episode_records import EntryRecord, ToolCallRecord
from optimizer.context.compressor import Compressor
from optimizer.context.history import Entry
from optimizer.context.moves.base import AnswerKey
from optimizer.context.recall import RECALL_SPEC, RECALL_TOOL, RecallStore
from optimizer.context.record import CompressionRecord
from optimizer.context.strategies.base import ContextStrategy
from optimizer.errors import InfrastructureError
from optimizer.llm.usage import Pricing
from optimizer.runtime import ContextRuntime
from optimizer.tokens import MESSAGE_OVERHEAD_TOKENS, count_message_tokens, count_tokens
from optimizer.world.sources import literal_carriers
from optimizer.world.task import Task
from optimizer.world.tool import ToolCall, ToolOutput, ToolSpec

MALFORMED_NOTICE = (
    "Your last reply could not be used ({reason}). Reply with exactly one JSON object: "
    '{{"tool": "<tool name>", "arguments": {{...}}}}.'
)


@dataclass
class EpisodeServices:
    """What the loop needs besides the task, agent and strategy."""

    compressor: Compressor | None = None
    agent_pricing: Pricing | None = None
    compressor_pricing: Pricing | None = None
    # Server-side token count of a system prompt (for peak tokens from reported usage).
    system_tokens: Callable[[str], int] | None = None
    max_total_steps: int = 200


def run_episode(task: Task, agent: Agent, strategy: ContextStrategy, services: EpisodeServices) -> Episode:
    started = time.perf_counter()
    episode = Episode(
        task_id=task.id,
        suite=task.suite,
        strategy=strategy.label(),
        strategy_version=strategy.version(),
        agent=agent.name,
        outcome="failure",
    )
    env = task.make_env()
    # The runtime owns history in, request out; the loop adds the environment, the agent and the records.
    runtime = ContextRuntime(
        strategy,
        compressor=services.compressor,
        answer_key=answer_key(task) if strategy.kind == "oracle" else None,
    )
    answers: list[str | None] = []
    state = _LoopState()
    try:
        _record_entry(episode, runtime.start(task.instruction), task.instruction, 0)
        for turn_index, turn in enumerate(task.turns):
            if turn_index > 0:
                entry = runtime.add_user(turn.content)
                _record_entry(episode, entry, turn.content, runtime.step)
            answer = _run_turn(task, turn_index, agent, runtime, env, episode, services, state, started)
            answers.append(answer)
            if state.stopped:
                break
        answers.extend([None] * (len(task.turns) - len(answers)))
        verdict = env.check(answers)
        episode.outcome = "success" if verdict.passed and not state.stopped_by_agent_error else "failure"
        episode.reasons = list(verdict.reasons) + state.reasons
        episode.blocking = list(verdict.blocking)
    except InfrastructureError as exc:
        episode.outcome = "infra_error"
        episode.error = f"{exc.kind}: {exc}"
    finally:
        env.close()
    episode.answers = answers
    episode.deviations = agent.deviation_records()
    episode.wall_s = time.perf_counter() - started
    episode.metrics = compute_metrics(
        episode,
        agent_pricing=services.agent_pricing,
        compressor_pricing=services.compressor_pricing if strategy.uses_compressor else None,
        visibility=agent.fact_visibility(),
    )
    return episode


@dataclass
class _LoopState:
    stopped: bool = False
    stopped_by_agent_error: bool = False
    # Token count of each message text sent so far (by text hash): most of a request repeats the last one.
    counted: dict[str, int] = dataclasses.field(default_factory=dict)
    reasons: list[str] = dataclasses.field(default_factory=list)


@dataclass(frozen=True)
class _Listing:
    """The tools offered at a request and the system prompt that lists them."""

    tools: list[ToolSpec]
    specs: Mapping[str, ToolSpec]
    system: str
    system_tokens: int | None


@dataclass
class _Turn:
    """One user turn: its tools, listed with `recall` once the runtime offers it (`ContextRuntime.recall_offered`)."""

    index: int
    agent: Agent
    services: EpisodeServices
    env_tools: list[ToolSpec]
    _listings: dict[bool, _Listing] = dataclasses.field(default_factory=dict)

    def listing(self, recall: bool) -> _Listing:
        if recall not in self._listings:
            tools = [*self.env_tools, RECALL_SPEC] if recall else list(self.env_tools)
            system = self.agent.system_prompt(tools)
            self._listings[recall] = _Listing(
                tools, {t.name: t for t in tools}, system, _system_tokens(self.agent, system, self.services)
            )
        return self._listings[recall]

    def system(self, recall: bool) -> str:
        return self.listing(recall).system


def _run_turn(
    task: Task,
    turn: int,
    agent: Agent,
    runtime: ContextRuntime,
    env,
    episode: Episode,
    services: EpisodeServices,
    state: _LoopState,
    started: float,
) -> str | None:
    current = _Turn(turn, agent, services, list(env.tools(turn)))
    malformed_in_a_row = 0
    for _ in range(task.max_steps_per_turn):
        if runtime.step >= services.max_total_steps:
            break
        step = runtime.step
        action, listing = _request(current, step, agent, runtime, episode, state, started)

        if action.malformed is not None:
            malformed_in_a_row += 1
            if malformed_in_a_row > 1:
                runtime.advance()  # the request was made; no entry answers it
                state.stopped = state.stopped_by_agent_error = True
                state.reasons.append(f"agent error at step {step}: {action.malformed}")
                return None
            entry = runtime.add_notice(MALFORMED_NOTICE.format(reason=action.malformed))
            _record_entry(episode, entry, entry.content, step + 1)
            continue
        malformed_in_a_row = 0

        if action.is_finish:
            entry = runtime.add_action(answer=action.answer)
            _record_entry(episode, entry, entry.content, step + 1)
            return action.answer

        entry = runtime.add_action(calls=action.calls)
        _record_entry(episode, entry, entry.content, step + 1)
        for call in action.calls:
            _call_tool(call, current.index, listing.specs, step, env, runtime, episode, started)
    state.stopped = True
    state.reasons.append(f"turn {turn} hit the step limit ({task.max_steps_per_turn} per turn)")
    return None


def _request(
    turn: _Turn,
    step: int,
    agent: Agent,
    runtime: ContextRuntime,
    episode: Episode,
    state: _LoopState,
    started: float,
) -> tuple[AgentAction, _Listing]:
    """One request: rebuilt from the history, sent to the agent, and recorded with what the moves did to it."""
    prepared = runtime.prepare(turn.system, native_tools=agent.native_tools())
    listing = turn.listing(prepared.recall_offered)
    # The history moves ran for this request: they broke the cache if the request rewrote a sent prefix.
    episode.records.extend(
        _filed(episode, r, prepared.condense_started - started, prepared.condense_s, prepared.cache_break)
        for r in prepared.records
    )
    if prepared.budget_record is not None:
        episode.records.append(_filed(episode, prepared.budget_record, time.perf_counter() - started, 0.0))
    messages = prepared.messages
    step_started = time.perf_counter() - started
    action = agent.act(
        AgentInput(messages=messages, tools=listing.tools, turn=turn.index, step=step, recall=_recaller(runtime.store))
    )
    request = [{"role": m["role"], "text": episode.store(_message_text(m))} for m in messages]
    record = StepRecord(
        step=step,
        turn=turn.index,
        replayed=[episode.store(e.content) for e in prepared.replayed],
        budgeted=[episode.store(e.content) for e in prepared.budgeted],
        request=request,
        input_tokens=_input_tokens(action, messages, request, listing.system_tokens, state.counted),
        action=_action_dict(action),
        usage=action.usage.to_dict() if action.usage else None,
        latency_s=action.latency_s,
        attempts=action.attempts,
        cache_break=prepared.cache_break,
        invalidated_tokens=prepared.invalidated_tokens,
        started_s=step_started,
    )
    episode.steps.append(record)
    if action.usage is not None:
        episode.token_source = action.usage.source
    return action, listing


def _call_tool(
    call: ToolCall,
    turn: int,
    specs: Mapping[str, ToolSpec],
    step: int,
    env,
    runtime: ContextRuntime,
    episode: Episode,
    started: float,
) -> None:
    """One tool call (among the tools of the request that made it): executed, its result written into the history
    (the write moves run), and recorded."""
    call_started = time.perf_counter()
    output, spec = _execute(call, specs, env, runtime, turn)
    call_latency = time.perf_counter() - call_started
    added = runtime.add_result(call, output, spec)
    for written_record in added.records:
        episode.records.append(_filed(episode, written_record, added.write_started - started, added.write_s))
    _record_entry(episode, added.written, output.content, step + 1)
    episode.tool_calls.append(
        ToolCallRecord(
            step=step,
            turn=turn,
            name=call.name,
            arguments=dict(call.arguments),
            signature=call.signature(),
            side_effect=bool(spec and spec.side_effect),
            is_error=output.is_error,
            retention=added.written.retention,
            result_tokens=added.raw.tokens,
            started_s=call_started - started,
            latency_s=call_latency,
        )
    )


def answer_key(task: Task) -> AnswerKey:
    """The task's reference solution as the tier-0 oracle reads it (what no other strategy may see)."""
    return AnswerKey(tuple(task.reference or ()), literal_carriers(task))


def _execute(
    call: ToolCall, specs: Mapping[str, ToolSpec], env, runtime: ContextRuntime, turn: int
) -> tuple[ToolOutput, ToolSpec | None]:
    spec = specs.get(call.name)
    if spec is None:
        return ToolOutput(f"Error: unknown tool {call.name!r}.", is_error=True), None
    if call.name == RECALL_TOOL:
        return runtime.recall(str(call.arguments.get("handle", ""))), spec
    return env.call(call, turn), spec


def _recaller(store: RecallStore) -> Callable[[str], str | None]:
    def recall(handle: str) -> str | None:
        entry = store.get(handle)
        return entry.content if entry is not None else None

    return recall


def _record_entry(episode: Episode, entry: Entry, raw: str, visible_from: int) -> None:
    episode.entries.append(
        EntryRecord(
            id=entry.id,
            kind=entry.kind,
            step=entry.step,
            turn=entry.turn,
            visible_from=visible_from,
            text=episode.store(entry.content),
            raw=episode.store(raw),
            tokens=entry.tokens,
            retention=entry.retention,
            call=entry.call,
            calls=tuple(entry.calls),
            answer=entry.answer,
            must_keep=tuple(entry.must_keep),
            is_error=entry.is_error,
        )
    )


def _filed(
    episode: Episode, record: CompressionRecord, started_s: float, latency_s: float, breaks_cache: bool = False
) -> CompressionRecord:
    """The record as the episode keeps it: timed, its compressor prompt and reply stored as text hashes."""
    io = record.compressor_io
    return dataclasses.replace(
        record,
        started_s=started_s,
        latency_s=latency_s,
        breaks_cache=breaks_cache,
        compressor_io=(episode.store(io[0]), episode.store(io[1])) if io else None,
    )


def _message_text(message: Mapping[str, Any]) -> str:
    if message.get("tool_calls"):
        return "\n".join(f"{c['function']['name']}({c['function']['arguments']})" for c in message["tool_calls"])
    return str(message.get("content") or "")


def _system_tokens(agent: Agent, system: str, services: EpisodeServices) -> int | None:
    if not agent.uses_model or services.system_tokens is None:
        return None
    return services.system_tokens(system)


def _input_tokens(
    action: AgentAction,
    messages: Sequence[Mapping[str, Any]],
    request: Sequence[Mapping[str, str]],
    system_tokens: int | None,
    counted: dict[str, int],
) -> int:
    usage = action.usage
    if usage is not None and usage.source == "reported" and system_tokens is not None:
        return max(0, usage.prompt_tokens - system_tokens)
    return _counted_tokens(messages[1:], request[1:], counted)


def _counted_tokens(
    messages: Sequence[Mapping[str, Any]], request: Sequence[Mapping[str, str]], counted: dict[str, int]
) -> int:
    """`count_message_tokens(messages)`, tokenizing each distinct message text once per episode.

    `request` holds the messages' text hashes. Re-tokenizing the whole context at every step made counting
    quadratic in the episode's length; a step's request mostly repeats the previous one's messages.
    """
    total = 0
    for message, sent in zip(messages, request, strict=True):
        content = message.get("content")
        if message.get("tool_calls") or not isinstance(content, str):
            total += count_message_tokens([message])
            continue
        key = sent["text"]
        if key not in counted:
            counted[key] = count_tokens(content)
        total += MESSAGE_OVERHEAD_TOKENS + counted[key]
    return total


def _action_dict(action: AgentAction) -> dict[str, Any]:
    return {
        "calls": [c.to_dict() for c in action.calls],
        "answer": action.answer,
        "malformed": action.malformed,
        "raw": action.raw[:2000],
    }
