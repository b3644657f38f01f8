"""LangChain's `SummarizationMiddleware` as a context strategy: the installed middleware decides.

Before each request the view is turned into the messages a `create_agent` state would hold and handed
to a real `SummarizationMiddleware` (the installed version) built with the strategy's `trigger`, `keep`
and `summary_prompt`; its chat model is a bridge to acon's compressor endpoint. So the trigger test, the
cutoff that keeps tool calls with their results, the trimming and the prompt assembly are LangChain's
own, and the summary message the agent then sees is the one LangChain writes into the state.

One difference, kept on purpose: the task statement stays verbatim in acon's view (LangChain folds the
first user message into the summary too). The summarizer still sees it, as LangChain's does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from optimizer.context.compressor import CompressorOutput
from optimizer.context.history import History
from optimizer.context.moves.base import Condensation, StrategyContext
from optimizer.context.summary_template import summary_prompt
from optimizer.summary.call import call_summarizer
from optimizer.summary.defaults import langchain_default
from optimizer.summary.lc_messages import message_id, to_langchain
from optimizer.summary.target_base import SummaryTarget


class _Bridge(BaseChatModel):
    """A LangChain chat model whose replies come from `reply(messages)`."""

    reply: Callable[[list[dict[str, Any]]], str]

    @property
    def _llm_type(self) -> str:
        return "acon-summarizer"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        plain = [{"role": _role(m), "content": m.text} for m in messages]
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self.reply(plain)))])


def _role(message: BaseMessage) -> str:
    return {"human": "user", "ai": "assistant", "system": "system"}.get(message.type, "user")


class LangChainSummary(SummaryTarget):
    """`SummarizationMiddleware(trigger=("tokens", trigger), keep=("messages", keep), summary_prompt=...)`."""

    type: Literal["langchain_summary"] = "langchain_summary"
    target = "langchain"
    takes_closing = True
    trigger_tokens: int = Field(gt=0, description="LangChain `trigger=('tokens', N)` (its approximate count).")
    keep_messages: int = Field(gt=0, description="LangChain `keep=('messages', N)`.")
    trim_tokens_to_summarize: int | None = Field(
        None, gt=0, description="LangChain's setting of that name; None: the installed default."
    )

    def instruction_text(self) -> str:
        return self.instructions if self.instructions is not None else str(langchain_default().text)

    def trigger(self) -> int:
        return self.trigger_tokens

    def keep_steps(self) -> int:
        return max(1, self.keep_messages // 2)

    def middleware(self, reply: Callable[[list[dict[str, Any]]], str]) -> SummarizationMiddleware:
        middleware = SummarizationMiddleware(
            model=_Bridge(reply=reply),
            trigger=("tokens", self.trigger_tokens),
            keep=("messages", self.keep_messages),
            summary_prompt=summary_prompt(self.instruction_text()),
        )
        if self.trim_tokens_to_summarize is not None:  # unset: LangChain's own default trim stays in force
            middleware.trim_tokens_to_summarize = self.trim_tokens_to_summarize
        return middleware

    def condense(self, history: History, ctx: StrategyContext) -> Condensation | None:
        def reply(messages: list[dict[str, Any]]) -> CompressorOutput:
            self._needs_compressor(ctx)
            assert ctx.compressor is not None
            return call_summarizer(ctx.compressor, messages, self.max_tokens)

        return self._fold(history, ctx, reply)

    def _fold(
        self,
        history: History,
        ctx: StrategyContext,
        reply: Callable[[list[dict[str, Any]]], CompressorOutput],
    ) -> Condensation | None:
        """The middleware's update on the current view, its summary written by `reply`, as one summary edit."""
        view = history.replay()
        calls: list[tuple[list[dict[str, Any]], CompressorOutput]] = []

        def text(messages: list[dict[str, Any]]) -> str:
            out = reply(messages)
            calls.append((messages, out))
            return out.text

        update = self.middleware(text).before_model({"messages": to_langchain(view)}, None)  # type: ignore[arg-type]
        if update is None or not calls:
            return None
        new = update["messages"]
        kept = {m.id for m in new[2:]}
        folded = {e.id for e in view if e.id >= 0 and message_id(e) not in kept}
        messages, out = calls[-1]
        prompt = "\n".join(m["content"] for m in messages)
        return self._summary_edit(history, ctx, folded, str(new[1].content), out, prompt)
