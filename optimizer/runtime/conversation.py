"""The runtime: one guideline applied to one live conversation, history in, request out.

Every stage of the retention contract runs here and nowhere else: write-time moves on each fresh tool
result (checkpoint 1 -> 2), history moves recorded as edits and replayed (2 -> 3), the pre-send budget
(3 -> 4) and rendering (4 -> 5). The history, its edits and the recall store persist between requests,
so a summary made for one request is replayed, not recomputed, for the next, and the part of the request
before the newest edit stays byte-identical for the provider's prompt cache.

Two ways in. A user's agent passes OpenAI chat messages to `compact` (the runtime ingests only the
messages it has not seen yet). The project's agent loop drives the same object step by step
(`add_action`, `add_result`, `prepare`), which is what lets it record all five checkpoints.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

from optimizer.context.budget import apply_budget
from optimizer.context.compressor import Compressor
from optimizer.context.guideline import Guideline, read_guideline
from optimizer.context.history import Entry, EntryKind, History
from optimizer.context.moves.base import AnswerKey, StrategyContext
from optimizer.context.recall import RECALL_SPEC, RECALL_TOOL, RecallStore
from optimizer.context.record import CompressionRecord
from optimizer.context.strategies.base import ContextStrategy
from optimizer.errors import ConfigError
from optimizer.runtime.messages import AssistantMessage, SeenMessages, UserMessage, leading_system, plain_message
from optimizer.runtime.render import RenderMemo, action_json, common_prefix, render_messages
from optimizer.runtime.retention_map import CallClassifier, RetentionMap, as_retention_map
from optimizer.runtime.state import RuntimeState, RuntimeStats, dump_state, read_state
from optimizer.tokens import count_message_tokens, count_tokens
from optimizer.untrusted import parse_json
from optimizer.world.tool import ToolCall, ToolOutput, ToolSpec, classify_result

ToolFormat = Literal["native", "json"]


@dataclass(frozen=True)
class Prepared:
    """One request as the runtime built it, with the checkpoints the agent loop records."""

    step: int
    messages: list[dict[str, Any]]  # checkpoint 5: what is sent
    replayed: list[Entry]  # checkpoint 3
    budgeted: list[Entry]  # checkpoint 4
    records: tuple[CompressionRecord, ...]  # the history moves that ran for this request
    budget_record: CompressionRecord | None
    condense_started: float  # time.perf_counter() when the history moves started
    condense_s: float
    cache_break: bool  # this request rewrote part of the previous one
    invalidated_tokens: int  # tokens of the previous request past the common prefix
    recall_offered: bool = False  # the system prompt was built with `recall` among the tools


@dataclass(frozen=True)
class AddedResult:
    """A tool result as `add_result` filed it, with the checkpoints the agent loop records."""

    raw: Entry  # checkpoint 1: the result as the tool returned it
    written: Entry  # checkpoint 2: what the history holds after the write-time moves
    records: tuple[CompressionRecord, ...]  # the write-time moves that ran on it
    write_started: float  # time.perf_counter() when the write-time moves started
    write_s: float


_Method = TypeVar("_Method", bound=Callable[..., Any])


def _serialized(method: _Method) -> _Method:
    """One call at a time on a runtime; a second thread waits for the first to finish."""

    @functools.wraps(method)
    def locked(self: ContextRuntime, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)

    return cast(_Method, locked)


class ContextRuntime:
    """A guideline applied to one conversation; state kept between calls, saveable with `save`/`load`.

    `guideline`: a guideline file path, a `Guideline`, a registered prompt `NAME@ALIAS` (with
    `tracking_uri`), or any `ContextStrategy` (the agent loop passes its strategy). `retention`: a
    `RetentionMap`, a mapping `tool name -> class / {retention_class, side_effect}`, or a classifier
    `(name, arguments) -> class`. `compressor`: an `openai.OpenAI` client (with `compressor_model`), an
    acon `ChatClient` or `Compressor`; required when a guideline's moves call an LLM. A guideline that
    leaves skills or write receipts unpinned is refused unless `allow_unpinned` (to study that failure; a
    `UserWarning` and `contract_override` then say so). Calls from several threads are run one at a time.
    `answer_key`: the task's reference solution, which only the tier-0 `oracle` reads (the agent loop passes
    it to it alone). A guideline that clears recoverably offers `recall` from the first request that shows a
    handle (call `tools()` after `compact()`), from the first request if its policy says `recall_tool: always`, or
    never with `recall_tool: never` (placeholders then name what was cut without a handle).
    """

    def __init__(
        self,
        guideline: str | Path | Guideline | ContextStrategy,
        *,
        retention: RetentionMap | Mapping[str, Any] | CallClassifier | None = None,
        compressor: Any = None,
        compressor_model: str | None = None,
        tracking_uri: str | None = None,
        answer_key: AnswerKey | None = None,
        allow_unpinned: bool = False,
    ) -> None:
        self.strategy = _strategy(guideline, tracking_uri, allow_unpinned)
        # A strategy object was checked when it was built; its runner reports an override.
        self.contract_override: str | None = None
        if not isinstance(guideline, ContextStrategy):
            self.contract_override = _override(self.strategy)
            if self.contract_override is not None:
                warnings.warn(self.contract_override, UserWarning, stacklevel=2)
        self.compressor = _compressor(compressor, compressor_model)
        if self.compressor is None and self.strategy.uses_compressor and not isinstance(guideline, ContextStrategy):
            raise ConfigError(
                f"guideline {self.strategy.label()} compresses with an LLM: pass compressor= "
                "(an OpenAI-compatible client and compressor_model=)"
            )
        self.retention = as_retention_map(retention)
        self.answer_key = answer_key or AnswerKey()
        self.history = History()
        self.store = RecallStore(advertised=self.strategy.recall_tool != "never")
        self.stats = RuntimeStats()
        self._step = 0
        self._turn = 0
        self._action_step = 0  # the step of the latest action: its results are written under it
        self._previous_request: list[dict[str, Any]] | None = None
        # Whether the previous request listed `recall` (not saved: a restored runtime takes the listing its store
        # implies, so a state saved between the first clear and the next request counts no break for it).
        self._recall_listed = False
        self._seen = SeenMessages()
        self._rendered = RenderMemo()
        # One conversation is one sequence of calls: two threads compacting it at once (an SDK client shared
        # by threads, parallel tool calls recalling) would both ingest the same messages. Reentrant, since
        # `compact` drives the step-wise methods that are public too.
        self._lock = threading.RLock()

    @property
    def step(self) -> int:
        """The step of the next request."""
        return self._step

    @property
    def turn(self) -> int:
        """The user turn the conversation is in (0: the task's)."""
        return self._turn

    # -- the user's way in: OpenAI chat messages -------------------------------------------------------

    @property
    def recall_offered(self) -> bool:
        """Whether the next request lists `recall`: the guideline clears recoverably and (unless its `recall_tool`
        is `always`) something has been cleared behind a handle. Once offered, it stays offered."""
        if not self.strategy.offers_recall:
            return False
        return self.strategy.recall_tool == "always" or len(self.store) > 0

    def tools(self, tools: Sequence[Mapping[str, Any]] | None = None) -> list[dict[str, Any]]:
        """OpenAI tool schemas to send with the messages `compact` just returned: `tools`, plus `recall` once
        the guideline has cleared something recoverably (see `recall_offered`)."""
        out = [dict(t) for t in tools or ()]
        names = {(t.get("function") or {}).get("name") for t in out}
        if RECALL_TOOL in names:
            raise ConfigError(f"a tool is already named {RECALL_TOOL!r}: the runtime's recall tool needs the name")
        if self.recall_offered:
            out.append(RECALL_SPEC.openai_schema())
        return out

    @_serialized
    def compact(
        self, messages: Sequence[Mapping[str, Any]], *, tool_format: ToolFormat = "native"
    ) -> list[dict[str, Any]]:
        """The messages to send instead of `messages` (the whole conversation, as the API takes it).

        A new list, whose messages are read-only dicts (`SentMessage`): later requests hand the same ones out
        again, so an edit is refused; `dict(message)` is a copy to edit.

        Only messages past those seen in earlier calls are ingested; the conversation must extend what
        the runtime saw (a rewritten earlier message is an error, not silently re-based). An earlier
        message handed in again as the same object is not read again, so an edit made in place on it (the
        same dict, changed) is not detected unless it is the last message seen (see `SeenMessages`).
        """
        if not isinstance(messages, Sequence):  # an iterator, as the SDK's `messages` may be
            messages = list(messages)
        system, offset = leading_system(messages)  # the system prompt is read afresh: it is not history
        seen = self._seen
        for index, message, plain, fingerprint in seen.unseen(messages, offset):
            self._ingest(plain, index)
            seen.remember(message, plain, fingerprint)
        if not self.history.entries:
            raise ConfigError("the conversation has no user message yet")
        seen.system = system
        native = tool_format == "native"
        prepared = self._prepare(seen.system or "", native_tools=native)
        # Native output shows each assistant's own text again (the memo's `sent`); a conversation without a
        # system prompt gets none back.
        sent = self._rendered.sent if native else prepared.messages
        # The messages themselves are the memo's, read-only (`SentMessage`): a copy of each, at every call, was
        # the one part of a call that still cost the whole conversation. The list is the caller's.
        return sent[1:] if native and seen.system is None else sent[:]

    def _ingest(self, message: Any, index: int) -> None:
        """Add one message to the history through the step-wise methods (write-time moves run on tool results)."""
        read = self._seen.read(message, index, started=bool(self.history.entries))
        if isinstance(read, UserMessage):
            if self.history.entries:
                self.add_user(read.text)
            else:
                self.start(read.text)
        elif isinstance(read, AssistantMessage):
            entry = self.add_action(calls=read.calls) if read.calls else self.add_action(answer=read.text)
            if read.text or not read.calls:
                self._seen.texts[entry.id] = read.text
        else:
            self.add_result(read.call, read.output(self.store), RECALL_SPEC if read.call.name == RECALL_TOOL else None)
            self._seen.answered.add(read.call.id)

    @_serialized
    def answer(self, call: Any) -> str | None:
        """The content of the tool message answering a `recall` call; None for any other tool (yours to run).

        `call` is an OpenAI `tool_calls` item, as a dict or the SDK's object.
        """
        call = plain_message(call)
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise ConfigError(
                "answer() takes one tool call (an item of an assistant message's tool_calls, with 'function' and "
                f"its 'name'), not {_shown(call)}"
            )
        if function["name"] != RECALL_TOOL:
            return None
        arguments = function.get("arguments") or "{}"
        if isinstance(arguments, str):  # as the API sends them; inline objects are taken as `compact` takes them
            try:
                arguments = parse_json(arguments)
            except json.JSONDecodeError:
                return "Error: recall arguments are not JSON."
        handle = arguments.get("handle") if isinstance(arguments, Mapping) else None
        return self.recall(str(handle or "")).content

    # -- the agent loop's way in: one step at a time ---------------------------------------------------

    @_serialized
    def start(self, task: str) -> Entry:
        """The conversation's first user message: the task, never dropped."""
        if self.history.entries:
            raise ConfigError("the conversation already has its task")
        return self.history.append(EntryKind.TASK, task, step=0, turn=0)

    @_serialized
    def add_user(self, text: str) -> Entry:
        """A later user turn."""
        self._turn += 1
        return self.history.append(EntryKind.USER, text, step=self._step, turn=self._turn)

    @_serialized
    def add_notice(self, text: str) -> Entry:
        """Harness feedback after a reply that could not be used (it takes that request's step)."""
        entry = self.history.append(EntryKind.NOTICE, text, step=self._step, turn=self._turn)
        self._step += 1
        return entry

    @_serialized
    def advance(self) -> None:
        """The latest request was sent and nothing will answer it (the agent gave up): the next takes a new step."""
        self._step += 1

    @_serialized
    def add_action(self, calls: Sequence[ToolCall] = (), answer: str | None = None) -> Entry:
        """The assistant's reply to the latest request: tool calls, or a final answer."""
        draft = Entry(
            id=len(self.history.entries),
            kind=EntryKind.ACTION,
            content="",
            step=self._step,
            turn=self._turn,
            calls=tuple(calls),
            answer=answer,
        )
        content = action_json(draft)
        entry = self.history.add(dataclasses.replace(draft, content=content, tokens=count_tokens(content)))
        self._action_step = self._step
        self._step += 1
        return entry

    @_serialized
    def recall(self, handle: str) -> ToolOutput:
        """Run the `recall` tool: the stored original, or an error for a handle the store never issued."""
        original = self.store.get(handle)
        if original is None:
            return ToolOutput(f"Error: no stored content for handle {handle!r}.", is_error=True)
        shown = self._restored_in_view(handle, original)
        if shown is not None:
            # A small agent recalls the same handle again and again (9 recalls in one task on the 1.5B model);
            # while the restored content is still in its context, say where it is instead of paying for it again.
            self.stats.recalls += 1
            where = shown.call.id if shown.call is not None else "?"
            return ToolOutput(
                f"Already restored: the full content of handle {handle} is the result of your recall call_id={where} "
                "above, still in your context. Use it from there; do not recall it again."
            )
        self.store.recalls += 1
        self.store.recalled_tokens += original.tokens
        self.stats.recalls += 1
        return ToolOutput(original.content, must_keep=original.must_keep)

    def _restored_in_view(self, handle: str, original: Entry) -> Entry | None:
        """The recall result that restored `handle`, if the request the agent just answered showed it whole."""
        sent = self._previous_request or []
        if not any(original.content in str(m.get("content") or "") for m in sent):
            return None
        for entry in reversed(self.history.replay()):
            if entry.recalled_handle == handle and entry.content == original.content:
                return entry
        return None

    @_serialized
    def add_result(self, call: ToolCall, output: ToolOutput, spec: ToolSpec | None = None) -> AddedResult:
        """A tool result through the write-time moves (checkpoint 1 -> 2).

        `spec` is the tool as registered (the loop knows it); without it the retention map classifies.
        """
        retention = classify_result(spec, call, output) if spec is not None else self.retention.classify(call, output)
        recalled = call.arguments.get("handle") if call.name == RECALL_TOOL and not output.is_error else None
        original = self.store.get(str(recalled)) if recalled is not None else None
        if original is not None and original.retention is not None:
            retention = original.retention  # a recall restores the original class
        raw = self.history.draft(
            EntryKind.RESULT,
            output.content,
            step=self._action_step,
            turn=self._turn,
            call=call,
            retention=retention,
            must_keep=output.must_keep,
            is_error=output.is_error,
            recalled_handle=str(recalled) if recalled is not None else None,
        )
        started = time.perf_counter()
        written = self.strategy.write(raw, self.history, self._context(self._action_step)) if recalled is None else None
        took = time.perf_counter() - started
        records = written.records if written is not None else ()
        content = written.content if written is not None else raw.content
        if content == raw.content:
            entry = self.history.add(raw)  # written verbatim: no second tokenization of a large result
        else:
            entry = self.history.append(
                EntryKind.RESULT,
                content,
                step=raw.step,
                turn=raw.turn,
                call=call,
                retention=retention,
                must_keep=output.must_keep,
                is_error=output.is_error,
                recalled_handle=raw.recalled_handle,
            )
        self._count(records)
        return AddedResult(raw, entry, records, started, took)

    @_serialized
    def prepare(self, system: str | Callable[[bool], str], *, native_tools: bool) -> Prepared:
        """The next request: history moves (recorded as edits), replay, pre-send budget, rendering.

        `system` may be a function of whether `recall` is offered: the moves of this very request may clear the
        first result behind a handle, and the system prompt that lists the tools is rendered after them."""
        prepared = self._prepare(system, native_tools=native_tools)
        # The memo's messages and views stay the runtime's: a caller may edit these.
        return dataclasses.replace(
            prepared,
            messages=list(map(dict.copy, prepared.messages)),
            replayed=list(prepared.replayed),
            budgeted=list(prepared.budgeted),
        )

    def _prepare(self, system: str | Callable[[bool], str], *, native_tools: bool) -> Prepared:
        """`prepare`, its messages and views the runtime's own (shared with the next request: never to be edited)."""
        step = self._step
        ctx = self._context(step)
        started = time.perf_counter()
        condensation = self.strategy.condense(self.history, ctx)
        took = time.perf_counter() - started
        records: tuple[CompressionRecord, ...] = ()
        if condensation is not None:
            self.history.extend_edits(condensation.edits)
            records = condensation.records
        replayed = self.history.view()
        budgeted, budget_record = apply_budget(
            replayed, self.strategy.presend_budget(), self.store, step=step, strategy=self.strategy.type
        )
        offered = self.recall_offered
        listing_changed = offered != self._recall_listed
        self._recall_listed = offered
        rendered = render_messages(
            system(offered) if callable(system) else system,
            budgeted,
            native_tools=native_tools,
            memo=self._rendered,
            texts=self._seen.texts,
        )
        previous = self._previous_request
        cache_break, invalidated = cache_break_of(previous, rendered, shared=self._rendered.shared_with(previous))
        if listing_changed and previous is not None:
            # The tools come before the messages in a provider's prompt: listing one more rebuilds all of it.
            cache_break, invalidated = True, count_message_tokens(previous)
        self._previous_request = rendered
        self._count(records)
        self.stats.requests += 1
        self.stats.cache_breaks += int(cache_break)
        return Prepared(
            step, rendered, replayed, budgeted, records, budget_record, started, took, cache_break, invalidated, offered
        )

    # -- state ------------------------------------------------------------------------------------------

    @_serialized
    def save(self, path: str | Path) -> Path:
        """Write the conversation's state (history, edits, recall store, counters) as JSON."""
        from optimizer.storage import atomic_write_text

        target = Path(path)
        text = json.dumps(dump_state(self), ensure_ascii=False)
        try:
            atomic_write_text(target, text)
        except OSError as exc:
            raise ConfigError(f"cannot write runtime state to {target}: {exc.strerror or exc}") from None
        return target

    @_serialized
    def load(self, path: str | Path) -> ContextRuntime:
        """Restore a state `save` wrote, for the same guideline (a different one is refused).

        The state is read and checked whole before anything changes: a refused load leaves this runtime
        exactly as it was, never part saved conversation and part its own.
        """

        try:
            data = json.loads(Path(path).read_text())
        except FileNotFoundError:
            raise ConfigError(f"runtime state not found: {path}") from None
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
            raise ConfigError(f"{path}: not a runtime state file ({type(exc).__name__}: {exc})") from None
        except OSError as exc:  # a directory, a file it may not read
            raise ConfigError(f"{path}: not a runtime state file ({exc.strerror or exc})") from None
        return self.restore(data, source=str(path))

    @_serialized
    def restore(self, data: Any, *, source: str) -> ContextRuntime:
        """Restore a state as `save` writes it, already parsed (a LangGraph thread's state holds one)."""
        state = read_state(data, source=source, strategy_version=self.strategy.version())
        state.store.advertised = self.store.advertised  # the guideline's, which a saved state does not hold
        self.history, self.store, self.stats, self._seen = state.history, state.store, state.stats, state.seen
        self._step, self._turn, self._action_step = state.step, state.turn, state.action_step
        self._previous_request = state.previous_request
        self._recall_listed = self.recall_offered
        self._rendered = RenderMemo()
        return self

    @_serialized
    def state(self) -> RuntimeState:
        """This runtime's state as one record of its live parts (`dump_state` writes it as JSON at once)."""
        return RuntimeState(
            strategy_version=self.strategy.version(),
            history=self.history,
            store=self.store,
            stats=self.stats,
            step=self._step,
            turn=self._turn,
            action_step=self._action_step,
            previous_request=self._previous_request,
            seen=self._seen,
        )

    # -- internals --------------------------------------------------------------------------------------

    def _context(self, step: int) -> StrategyContext:
        task = self.history.entries[0].content if self.history.entries else ""
        return StrategyContext(
            task=task,
            step=step,
            store=self.store,
            compressor=self.compressor,
            strategy=self.strategy.type,
            answer_key=self.answer_key,
        )

    def _count(self, records: Sequence[CompressionRecord]) -> None:
        for record in records:
            self.stats.compressions += 1
            if record.compressor_usage is not None and not record.compressor_cached:
                self.stats.compressor_calls += 1


def _shown(value: Any) -> str:
    return repr(value)[:80] if isinstance(value, str | Mapping) else type(value).__name__


def cache_break_of(
    previous: Sequence[Mapping[str, Any]] | None, current: Sequence[Mapping[str, Any]], *, shared: int = 0
) -> tuple[bool, int]:
    """Did this request rewrite part of the previous one (so a prompt cache cannot reuse it)?

    `shared`: how many messages after the first (the system prompt) both hold as the very same objects,
    which then need no comparing.
    """
    if previous is None:
        return False, 0
    if shared and previous[0] == current[0]:
        start = 1 + shared
        common = start + common_prefix(previous[start:], current[start:])
    else:
        common = common_prefix(previous, current)
    if common >= len(previous):
        return False, 0
    return True, count_message_tokens(previous[common:])


def _strategy(
    guideline: str | Path | Guideline | ContextStrategy, tracking_uri: str | None, allow_unpinned: bool
) -> ContextStrategy:
    from optimizer.context.strategies import GuidelineStrategy

    if isinstance(guideline, ContextStrategy):
        return guideline
    if isinstance(guideline, Guideline):
        return GuidelineStrategy(guideline=guideline, allow_unpinned=allow_unpinned)
    text = str(guideline)
    if "@" in text and not text.endswith(".md") and not Path(text).exists():
        from optimizer.context.prompt_registry import load_from_registry

        loaded = load_from_registry(text, tracking_uri)
        return GuidelineStrategy(guideline=loaded, allow_unpinned=allow_unpinned)
    from optimizer.context.guideline import resolve_path

    return GuidelineStrategy(guideline=read_guideline(resolve_path(text)), allow_unpinned=allow_unpinned)


def _override(strategy: ContextStrategy) -> str | None:
    from optimizer.context.strategies import GuidelineStrategy

    return strategy.contract_override() if isinstance(strategy, GuidelineStrategy) else None


def _compressor(value: Any, model: str | None) -> Compressor | None:
    from optimizer.llm.client import ChatClient

    if value is None or isinstance(value, Compressor):
        return value
    if isinstance(value, ChatClient):
        return Compressor(value)
    import openai

    if isinstance(value, openai.OpenAI):
        if not model:
            raise ConfigError("compressor_model= is required with an openai client as compressor")
        return Compressor(ChatClient.from_sdk(value, model))
    raise ConfigError(
        f"compressor must be an openai.OpenAI client, a ChatClient or a Compressor, not {type(value).__name__}"
    )
