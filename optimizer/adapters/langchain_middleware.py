"""LangChain 1.x agents: the runtime as agent middleware (`pip install 'acon[langchain]'`).

```python
agent = create_agent(model, tools, middleware=[AconMiddleware(ContextRuntime("guideline.md", retention={...}))])
```

Before every model call the agent's messages (LangChain objects, system prompt apart) go through the
runtime as OpenAI messages and the compacted ones are sent instead; the agent's own state keeps the full
conversation, exactly as the runtime expects. A tool message LangChain marked `status="error"` (the tool
raised) is an error result. When the guideline clears recoverably the middleware registers the `recall`
tool, answered from the runtime's store.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest
from langchain_core.messages import ToolMessage, convert_to_messages, convert_to_openai_messages
from langchain_core.tools import StructuredTool

from optimizer.context.recall import RECALL_SPEC, RECALL_TOOL
from optimizer.runtime import ContextRuntime


class AconMiddleware(AgentMiddleware):
    """Compacts every model request of one agent conversation with `runtime`."""

    def __init__(self, runtime: ContextRuntime) -> None:
        super().__init__()
        self.runtime = runtime
        self.tools = [_recall_tool(runtime)] if runtime.strategy.offers_recall else []

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        return handler(request.override(messages=self._compact(request.messages)))

    async def awrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Any]) -> Any:
        return await handler(request.override(messages=self._compact(request.messages)))

    def _compact(self, messages: list[Any]) -> list[Any]:
        plain = convert_to_openai_messages(messages)
        if len(plain) != len(messages):
            raise ValueError(f"converted {len(messages)} LangChain messages into {len(plain)} OpenAI messages")
        for original, message in zip(messages, plain, strict=True):
            if isinstance(original, ToolMessage) and original.status == "error":
                message["is_error"] = True  # the tool raised: runtime status, not read from the text
        return convert_to_messages(self.runtime.compact(plain))


def _recall_tool(runtime: ContextRuntime) -> StructuredTool:
    def recall(handle: str) -> str:
        return runtime.recall(handle).content

    return StructuredTool.from_function(recall, name=RECALL_TOOL, description=RECALL_SPEC.description)
