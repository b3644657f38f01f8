"""`langchain_summary_ceiling`: what a summary that misses nothing buys the agent at the target's trigger and keep.

A diagnostic, never exported or proposed. Like the `oracle` it reads the task's answer key, so it can write the
summary every instruction text reaches for: each call the agent made, each later user message, every line of a
folded result that holds a literal some reference step needs (a skill rule's whole line), verbatim and under the call
that returned it (two product sheets both say "unit price:"), and the tool the task calls next. LangChain's
own middleware still decides when to summarize and what to fold, so the agent sees what it would see after a
perfect summarizer. At tier 0 it solves what full context solves; at tier 1 it bounds what any instruction text
can give the real agent under these knobs: where the real agent fails from this summary, it fails from every
summary a text can elicit, and the fault is the target's folding or the agent, not the words.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from optimizer.context.compressor import CompressorOutput
from optimizer.context.history import Entry, EntryKind, History, Summarize
from optimizer.context.moves.base import AnswerKey, Condensation, StrategyContext
from optimizer.context.strategies.base import StrategyKind
from optimizer.context.strategies.oracle import progress
from optimizer.llm.usage import Usage
from optimizer.summary.langchain_target import LangChainSummary
from optimizer.world.needs import occurs


class LangChainSummaryCeiling(LangChainSummary):
    """`LangChainSummary`'s folding with the summary written from the answer key instead of by a model."""

    type: Literal["langchain_summary_ceiling"] = "langchain_summary_ceiling"  # type: ignore[assignment]
    kind: ClassVar[StrategyKind] = "oracle"
    # The question it answers is the real agent's: it reads the answer key, yet runs at tier 1.
    tier1_ceiling: ClassVar[bool] = True
    # What the summary says is this module's code, not a text: a change to it is a new ceiling, whose stored runs
    # must not be read back as the old one's (the first, without sources and next step, solved 3 of 6 at tier 1).
    FORMAT: ClassVar[int] = 2

    @property
    def uses_compressor(self) -> bool:
        return False

    def version(self) -> str:
        return f"{super().version()[:9]}-c{self.FORMAT}"

    def condense(self, history: History, ctx: StrategyContext) -> Condensation | None:
        # The middleware folds before it asks for a summary, so a first pass with a blank one says what is folded.
        blank = self._fold(history, ctx, lambda _messages: CompressorOutput("", Usage(source="counted"), cached=False))
        if blank is None:
            return None
        covered = next(e for e in blank.edits if isinstance(e, Summarize)).entry_ids
        folded = [history.entries[i] for i in covered]
        text = ceiling_summary(folded, ctx.answer_key, ctx.task, next_step(history, ctx.answer_key))
        written = CompressorOutput(text, Usage(source="counted"), cached=False)
        return self._fold(history, ctx, lambda _messages: written)


def next_step(history: History, key: AnswerKey) -> str:
    """The tool the reference calls next, by name only (its arguments may hold values no result has shown yet):
    what a summarizer reading the task's plan and the calls made can say."""
    cursor = progress(history, key.steps).cursor
    if cursor >= len(key.steps):
        return ""
    call = key.steps[cursor].call
    return f"call {call.name}" if call is not None else "give the final answer"


def ceiling_summary(folded: Sequence[Entry], key: AnswerKey, task: str, next_up: str = "") -> str:
    """The calls, later user messages and needed lines of `folded` (each under the call whose result held it),
    verbatim, and the next step."""
    calls = [f"- {c.signature()}" for e in folded if e.kind is EntryKind.ACTION for c in e.calls]
    answers = [f"- answered: {e.answer}" for e in folded if e.kind is EntryKind.ACTION and e.answer]
    users = [f"- {e.content}" for e in folded if e.kind is EntryKind.USER]
    facts = []
    for entry in (e for e in folded if e.kind is EntryKind.RESULT):
        lines = needed_lines(entry.content, key, task)
        source = entry.call.signature() if entry.call is not None else "a tool"
        facts += [f"- from {source}: {line}" for line in lines]
    sections: list[tuple[str, list[str]]] = [
        ("Calls made so far, in order:", calls + answers),
        ("Later user messages:", users),
        ("Lines of the tool results the remaining work needs, verbatim:", facts),
        ("Next step:", [f"- {next_up}"] if next_up else []),
    ]
    return "\n".join(f"{head}\n" + "\n".join(body) for head, body in sections if body)


def needed_lines(result: str, key: AnswerKey, task: str) -> list[str]:
    """Each line of `result` holding a literal any reference step needs and the task statement does not show, once."""
    out: list[str] = []
    for need in (n for step in key.steps for n in step.needs):
        if occurs(need.literal, task):
            continue
        line = _line_with(result, need.literal)
        if line is not None and line not in out:
            out.append(line)
    return out


def _line_with(text: str, literal: str) -> str | None:
    found = next((line.strip() for line in text.splitlines() if occurs(literal, line)), None)
    if found is None and occurs(literal, text):  # a literal over several lines: the text it sits in
        return " ".join(text.split())
    return found
