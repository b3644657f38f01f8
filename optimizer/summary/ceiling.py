"""`langchain_summary_ceiling`: what a summary that misses nothing buys the agent at the target's trigger and keep.

A diagnostic, never exported or proposed. Like the `oracle` it reads the task's answer key, so it can write the
summary every instruction text reaches for: each call the agent made, each later user message, and every line of
a folded result that holds a literal some reference step needs (a skill rule's whole line), verbatim. LangChain's
own middleware still decides when to summarize and what to fold, so the agent sees what it would see after a
perfect summarizer. At tier 0 it solves what full context solves; at tier 1 it bounds what any instruction text
can give the real agent under these knobs: where the real agent fails from this summary, it fails from every
summary a text can elicit, and the fault is the target's folding or the agent, not the words.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import ClassVar, Literal

from optimizer.context.compressor import CompressorOutput
from optimizer.context.history import Entry, EntryKind, History, Summarize
from optimizer.context.moves.base import AnswerKey, Condensation, StrategyContext
from optimizer.context.strategies.base import StrategyKind
from optimizer.llm.usage import Usage
from optimizer.summary.langchain_target import LangChainSummary
from optimizer.world.needs import occurs


class LangChainSummaryCeiling(LangChainSummary):
    """`LangChainSummary`'s folding with the summary written from the answer key instead of by a model."""

    type: Literal["langchain_summary_ceiling"] = "langchain_summary_ceiling"  # type: ignore[assignment]
    kind: ClassVar[StrategyKind] = "oracle"
    # The question it answers is the real agent's: it reads the answer key, yet runs at tier 1.
    tier1_ceiling: ClassVar[bool] = True

    @property
    def uses_compressor(self) -> bool:
        return False

    def condense(self, history: History, ctx: StrategyContext) -> Condensation | None:
        # The middleware folds before it asks for a summary, so a first pass with a blank one says what is folded.
        blank = self._fold(history, ctx, lambda _messages: CompressorOutput("", Usage(source="counted"), cached=False))
        if blank is None:
            return None
        covered = next(e for e in blank.edits if isinstance(e, Summarize)).entry_ids
        text = ceiling_summary([history.entries[i] for i in covered], ctx.answer_key, ctx.task)
        written = CompressorOutput(text, Usage(source="counted"), cached=False)
        return self._fold(history, ctx, lambda _messages: written)


def ceiling_summary(folded: Sequence[Entry], key: AnswerKey, task: str) -> str:
    """The calls, later user messages and needed lines of `folded`, verbatim, under three headings."""
    calls = [f"- {c.signature()}" for e in folded if e.kind is EntryKind.ACTION for c in e.calls]
    answers = [f"- answered: {e.answer}" for e in folded if e.kind is EntryKind.ACTION and e.answer]
    users = [f"- {e.content}" for e in folded if e.kind is EntryKind.USER]
    results = [e.content for e in folded if e.kind is EntryKind.RESULT]
    lines = [f"- {line}" for line in needed_lines(results, key, task)]
    sections: list[tuple[str, list[str]]] = [
        ("Calls made so far, in order:", calls + answers),
        ("Later user messages:", users),
        ("Lines of the tool results the remaining work needs, verbatim:", lines),
    ]
    return "\n".join(f"{head}\n" + "\n".join(body) for head, body in sections if body)


def needed_lines(results: Iterable[str], key: AnswerKey, task: str) -> list[str]:
    """Each result line holding a literal any reference step needs and the task statement does not show, once."""
    texts = list(results)
    out: list[str] = []
    for need in (n for step in key.steps for n in step.needs):
        if occurs(need.literal, task):
            continue
        for text in texts:
            line = _line_with(text, need.literal)
            if line is not None and line not in out:
                out.append(line)
    return out


def _line_with(text: str, literal: str) -> str | None:
    found = next((line.strip() for line in text.splitlines() if occurs(literal, line)), None)
    if found is None and occurs(literal, text):  # a literal over several lines: the text it sits in
        return " ".join(text.split())
    return found
