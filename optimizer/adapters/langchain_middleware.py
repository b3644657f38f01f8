"""LangChain 1.x agents: the runtime as agent middleware (`pip install 'acon[langchain]'`).

```python
middleware = AconMiddleware("guideline.md", retention={"read_doc": "static"})
agent = create_agent(model, tools, middleware=[middleware], checkpointer=InMemorySaver())
agent.invoke({"messages": [...]}, {"configurable": {"thread_id": "t1"}})
```

The middleware holds settings only. Each conversation's runtime state (history, edits, recall store,
counters) lives in the agent's own state under `acon`, so it belongs to the thread as the messages do:
one agent serves any number of threads, and a checkpointer persists and restores it with them (a new
process resumes a thread where it stopped). Before every model call the thread's runtime is rebuilt from
that state, the agent's messages (LangChain objects, system prompt apart) go through it as OpenAI messages,
the compacted ones are sent, and the runtime's new state is written back beside the model's reply. The
agent's messages keep the full conversation, exactly as the runtime expects. A tool message LangChain
marked `status="error"` (the tool raised) is an error result. When the guideline clears recoverably the
middleware registers the `recall` tool, answered from the thread's store and shown to the model once the
conversation has cleared something behind a handle.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NotRequired

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest
from langchain.agents.middleware.types import ExtendedModelResponse, ModelResponse
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, ToolMessage, convert_to_messages, convert_to_openai_messages
from langchain_core.tools import StructuredTool
from langgraph.types import Command

from optimizer.context.guideline import Guideline
from optimizer.context.recall import RECALL_SPEC, RECALL_TOOL
from optimizer.errors import ConfigError
from optimizer.runtime import ContextRuntime
from optimizer.runtime.state import dump_state

STATE_KEY = "acon"


class AconState(AgentState):
    acon: NotRequired[dict[str, Any]]  # the thread's runtime state (`dump_state`), checkpointed with its messages


class AconMiddleware(AgentMiddleware):
    """Compacts every model request with a guideline, one runtime state per conversation thread.

    Takes what `ContextRuntime` takes (a guideline and `retention=`, `compressor=`, ...), or a fresh
    `ContextRuntime` whose settings every thread then shares.
    """

    state_schema = AconState

    def __init__(self, guideline: str | Path | Guideline | ContextRuntime, **settings: Any) -> None:
        super().__init__()
        if isinstance(guideline, ContextRuntime):
            if settings:
                raise ConfigError(f"AconMiddleware: pass {', '.join(settings)} to the ContextRuntime, not beside it")
            if guideline.stats.requests:
                raise ConfigError(
                    "AconMiddleware takes a fresh ContextRuntime as its settings; this one already holds a "
                    f"conversation ({guideline.stats.requests} requests)"
                )
            self._settings = guideline
        else:
            self._settings = ContextRuntime(guideline, **settings)
        self.tools = [_recall_tool(self)] if self._settings.strategy.offers_recall else []

    def runtime(self, state: Mapping[str, Any]) -> ContextRuntime:
        """The runtime of the conversation whose agent state is `state` (e.g. what `invoke` returned)."""
        settings = self._settings
        runtime = ContextRuntime(
            settings.strategy,
            retention=settings.retention,
            compressor=settings.compressor,
        )
        saved = state.get(STATE_KEY)
        if saved is not None:
            runtime.restore(saved, source="the thread's acon state")
        return runtime

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        runtime = self.runtime(request.state)
        response = handler(_compacted(runtime, request))
        return _with_state(response, runtime)

    async def awrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        runtime = self.runtime(request.state)
        response = await handler(_compacted(runtime, request))
        return _with_state(response, runtime)


def _compacted(runtime: ContextRuntime, request: ModelRequest) -> ModelRequest:
    """The request with its messages compacted, and the `recall` tool this middleware registers left out until
    the runtime offers it (`ContextRuntime.recall_offered`)."""
    messages = _compact(runtime, request.messages)
    if runtime.recall_offered:
        return request.override(messages=messages)
    tools = [t for t in request.tools if _tool_name(t) != RECALL_TOOL]
    return request.override(messages=messages, tools=tools)


def _tool_name(tool: Any) -> str | None:
    if isinstance(tool, Mapping):  # a provider-format dict
        return (tool.get("function") or {}).get("name") or tool.get("name")
    return getattr(tool, "name", None)


def _compact(runtime: ContextRuntime, messages: list[Any]) -> list[Any]:
    plain = convert_to_openai_messages(messages)
    if len(plain) != len(messages):
        raise ValueError(f"converted {len(messages)} LangChain messages into {len(plain)} OpenAI messages")
    for original, message in zip(messages, plain, strict=True):
        if isinstance(original, ToolMessage) and original.status == "error":
            message["is_error"] = True  # the tool raised: runtime status, not read from the text
    return convert_to_messages(runtime.compact(plain))


def _with_state(response: Any, runtime: ContextRuntime) -> ExtendedModelResponse:
    """The model's reply, plus the runtime's new state as an update of the thread's agent state."""
    update: dict[str, Any] = {}
    if isinstance(response, ExtendedModelResponse):  # an inner middleware's update joins this one
        if response.command is not None and isinstance(response.command.update, dict):
            update.update(response.command.update)
        response = response.model_response
    elif isinstance(response, AIMessage):
        response = ModelResponse(result=[response])
    update[STATE_KEY] = dump_state(runtime)
    return ExtendedModelResponse(model_response=response, command=Command(update=update))


def _recall_tool(middleware: AconMiddleware) -> StructuredTool:
    def recall(handle: str, runtime: ToolRuntime) -> Command:
        conversation = middleware.runtime(runtime.state)
        output = conversation.recall(handle)
        message = ToolMessage(
            output.content,
            tool_call_id=runtime.tool_call_id,
            name=RECALL_TOOL,
            status="error" if output.is_error else "success",
        )
        return Command(update={STATE_KEY: dump_state(conversation), "messages": [message]})

    return StructuredTool.from_function(recall, name=RECALL_TOOL, description=RECALL_SPEC.description)
