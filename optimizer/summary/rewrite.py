"""ACON's UT and CO steps on summary instructions, with the optimizer LLM, and what is refused.

UT: for each kind of fact the summaries lost (a value, a skill rule, a write receipt, a paging warning, an
error), the optimizer is asked for one instruction sentence that protects that kind, shown one example line with
its values hidden; the sentences are added to the learned part (targeted edits, not a monolithic rewrite). When
summaries looped (one sentence said again and again: the 0.5B summarizer under the seed's sections wrote one
paragraph under every heading, or one sentence up to its cap, in 5 of its summaries on six `reach_long` train
tasks), one more question shows the repeated sentence, values hidden, and asks for a sentence that stops the
repetition: a loop loses facts by crowding them out, which no per-kind question names. When summaries claimed a
step the agent had not taken (`optimizer.summary.claims`), one more question shows the claim, values and tool
names hidden, and asks for a sentence that stops such claims; when summaries stated values no message held
(`optimizer.summary.invented`), one more shows such a line, values hidden; when a summary was the task's steps
again with no result (`optimizer.summary.restated`), one more shows its first lines, values and tool names
hidden. Whether such a line helps is the screen's to say, as for any line: a hand-written one ("never repeat a
sentence") placed after the messages made the 0.5B model loop in 10 of 11 summaries on the same tasks
(`benchmarks/probe_summary_layout.py`), and a frequency penalty of 0.5 left 4 of 9 looping. One narrow question
per kind is what a small optimizer model can answer: shown the instructions and the failing summaries together,
the 1.5B local model continued the summary instead of editing the instructions. Where the kept sentences go,
above the messages with the rest or after them (`placed`), is the search's choice, not the optimizer's. The
by-call question (`by_call_step`) shows lost facts in the form of `optimizer.summary.ceiling`'s summaries instead
of one kind at a time; a probe asks it, the search does not (its line hurt the 0.5B summarizer). CO: from
summaries that kept everything it rewrites the learned part shorter; a closing part is left as it is.

Refused, each with its reason: a line naming a value or id from the examples or any id-like token, or copying
five words in a row of the example (it would fit one task); a line that is not an instruction (a `name =
value` row, a fragment, no instructing verb); a UT line naming no kind of fact that was lost (untargeted); a
line already present; an empty reply. A CO rewrite that states a number (a made-up summary, not instructions) or
no longer names a kind of fact its parent protected is refused whole; one that drops more than half the learned
text is marked a collapse: `search` then takes it only if it wins outright, never at equal scores.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from optimizer.context.summary_template import CLOSING_LEAD
from optimizer.summary.contract_text import closing_part, learned_part, with_contract
from optimizer.summary.screen import LostFact, SummaryScore
from optimizer.summary.sentences import sentences
from optimizer.untrusted import fence

OptimizerLM = Callable[[str, float], str]  # (prompt, temperature) -> reply

# Words a targeted line uses for each kind of lost fact.
KIND_WORDS: dict[str, tuple[str, ...]] = {
    "value": ("value", "id", "identifier", "number", "amount", "name", "code", "sku"),
    "rule": ("rule", "skill", "instruction", "policy"),
    "receipt": ("receipt", "write", "created", "confirmation", "id"),
    "page": ("page", "pagination", "showing", "warning", "partial"),
    "error": ("error", "failure", "failed", "exception"),
    "loop": ("repeat", "repeated", "repeating", "repetition", "once", "duplicate", "twice", "again"),
    "claim": (
        "done",
        "completed",
        "performed",
        "happened",
        "actually",
        "pending",
        "remaining",
        "claim",
        "called",
        "finished",
        "executed",
        "occurred",
        "progress",
    ),
    # The by-call question asks for a form (each kept line under the call that returned it), not for a kind of
    # fact: its line is targeted when it names that form. "...where every step includes the necessary tool call and
    # its result, maintaining the same format..." (the 1.5B optimizer on 24 reach_long train tasks) names no kind.
    "the call and its result": ("call", "result", "tool"),
    # "The summarizer should refrain from generating values not present in the original input." and "... from
    # writing values that were not input to it." (the 1.5B optimizer's answers on `reach_long` train tasks): words
    # for where a value must come from, and for making one up.
    "invented": (
        "exact",
        "exactly",
        "verbatim",
        "invent",
        "guess",
        "generate",
        "generating",
        "fabricate",
        "hallucinate",
        "seen",
        "shown",
        "read",
        "present",
        "appears",
        "appeared",
        "given",
        "input",
        "original",
        "unknown",
        "placeholder",
    ),
    # A restated task holds the task's steps and nothing a call returned: a line that cures it names what the
    # calls gave back.
    "restated": ("returned", "result", "output", "outcome", "response", "found", "learned", "obtained"),
}
# What each kind of lost fact is, in the words the optimizer is asked about it.
KIND_TEXT: dict[str, str] = {
    "value": "an identifier or value a later step needs (an id, an amount, a quantity, a code)",
    "rule": "a rule from a skill or policy the agent read, which a later step must follow word for word",
    "receipt": "the id a write returned (its receipt): the answer quotes it, and it shows the write is done",
    "page": "a warning that a result was only partial (a 'page 1 of 3' or 'showing 20 of 45' line)",
    "error": "an error message a tool returned",
}
_ID = re.compile(r"[\w-]*\d[\w-]*")
# An id or value in a line meant to fit every task: letters and digits mixed, or three digits and more.
ID_LIKE = re.compile(r"\b(?=[\w-]*[A-Za-z])(?=[\w-]*\d)[\w-]+\b|\d{3,}")
_TOOL = re.compile(r"\b[a-z]+(?:_[a-z]+)+\b")  # snake_case: how tools are named
_ASSIGNMENT = re.compile(r"^[\w .-]{1,40}\s*(=|:)\s*\S")
_INSTRUCTING = re.compile(
    r"\b(keep|copy|preserve|include|retain|record|quote|list|note|mention|write|repeat|carry|state|report|"
    r"maintain|never|always|must|should|do not|don't|stop|avoid)\b",
    re.IGNORECASE,
)
# "A summarizer ... loses the specific rule ... that a later step must follow": the 1.5B optimizer's account of the
# failure passes the verb check on "must"; a line that says a fact is lost, and does not open with an instruction,
# describes the loss.
LOSS = re.compile(r"\b(loses|lost|drops|dropped|forgets|forgot|misses|missed|omits|omitted)\b", re.IGNORECASE)
MAX_LINES = 3
RESTATED_SHOWN = 4  # lines of a restated task the optimizer sees: enough to read as a plan, too few to copy one
COLLAPSE_SHARE = 0.5


@dataclass(frozen=True)
class ProtectKind:
    """A summarizer condenses the earlier steps of an AI agent's work. Its summaries lost the kind of
    information described below; an example line is shown with its values hidden. Write one instruction
    sentence for the summarizer that makes every summary keep this kind of information. The sentence must fit
    any task, so it names no value, id or name. Reply with that one sentence only."""

    lost: str
    example_line: str


@dataclass(frozen=True)
class StopRepeating:
    """A summarizer condenses the earlier steps of an AI agent's work. Its summaries said the sentence below
    (values hidden) again and again, under every section or until they were cut off, so the facts a later step
    needs found no room. Write one instruction sentence for the summarizer that stops this repetition. The
    sentence must fit any task, so it names no value, id or name. Reply with that one sentence only."""

    repeated: str


@dataclass(frozen=True)
class StopFalseClaims:
    """A summarizer condenses the earlier steps of an AI agent's work. Its summary said the sentence below
    (values and tool names hidden), but the agent had not done that step yet: an agent that trusts the summary
    skips the step. Write one instruction sentence for the summarizer that stops such claims. The sentence must
    fit any task, so it names no value, id, tool or name. Reply with that one sentence only."""

    claimed: str


@dataclass(frozen=True)
class StopInventing:
    """A summarizer condenses the earlier steps of an AI agent's work. Its summary wrote the line below (values
    hidden), and the values in it appear in no message the summarizer read: it made them up, and an agent that
    trusts the summary uses a wrong value. Write one instruction sentence for the summarizer that stops it from
    writing values it did not read. The sentence must fit any task, so it names no value, id or name. Reply with
    that one sentence only."""

    invented: str


@dataclass(frozen=True)
class StopRestating:
    """A summarizer condenses the earlier steps of an AI agent's work: the task it was given, then the tool calls
    it made and what they returned. Its summary was the lines below (values and tool names hidden): the task's own
    steps again, with nothing any tool returned, so an agent that continues from it starts the task over. Write one
    instruction sentence for the summarizer that makes every summary state what the tool calls returned instead of
    repeating the task. The sentence must fit any task, so it names no value, id, tool or name. Reply with that one
    sentence only."""

    restated: str


@dataclass(frozen=True)
class KeepUnderCall:
    """A summarizer condenses the earlier steps of an AI agent's work. Its summaries lost facts that a later step
    needed. Below, the lines that held them are shown the way a summary that kept them shows them (values and tool
    names hidden): the tool call that returned each, then that line of its result, word for word. Write one
    instruction sentence for the summarizer that makes every summary keep such lines in this form. The sentence
    must fit any task, so it names no value, id, tool or name. Reply with that one sentence only."""

    kept_form: str


@dataclass(frozen=True)
class ShortenInstructions:
    """Rewrite the summary instructions below so that the summaries they produce are shorter, while every
    summary still keeps every fact it keeps now. Keep each sentence that protects a kind of fact; merge and cut
    the rest. Never copy a value, id or name. Reply with the rewritten instructions only."""

    result: str
    instructions: str


# The instructions come last, fenced, and the prompt ends on this cue. With the successes shown after the
# instructions as bare headers, the 1.5B optimizer echoed the last header in each of six runs (the CO step never
# produced a text); the cue asks for the rewrite where the model starts writing.
SHORTEN_CUE = "Rewritten, shorter instructions:"
# Shown a restated task with no cue, the 1.5B optimizer retold the example's task in both of two asks ("The agent
# calls the <tool> to retrieve the customer id ..."), refused as copying its words: the example reads as a story to
# continue. The cue puts it where an instruction starts. The other questions were measured without one.
RESTATING_CUE = "Instruction for the summarizer:"


@dataclass
class Proposal:
    """One rewrite: the full text (learned part + contract), the optimizer's lines that were kept, and
    every refused line with its reason."""

    step: str  # "ut" or "co"
    text: str
    llm_lines: tuple[str, ...]
    refused: list[tuple[str, str]] = field(default_factory=list)
    collapse: bool = False
    reply: str = ""
    replaces: str = ""  # a paraphrase's: the sentence it says otherwise


Question = ProtectKind | StopRepeating | StopFalseClaims | StopInventing | StopRestating | KeepUnderCall


def render(signature: object, cue: str = "") -> str:
    """A question dataclass as a prompt: its docstring, then each field under its name."""
    doc = " ".join((type(signature).__doc__ or "").split())
    fields = "\n\n".join(f"# {name}\n{value}" for name, value in vars(signature).items())
    return f"{doc}\n\n{fields}" + (f"\n\n{cue}" if cue else "")


def minibatch(lost: Sequence[LostFact], size: int, seed: int) -> list[LostFact]:
    """Up to `size` lost facts, one kind after another so that a common kind does not crowd out the rest."""
    by_kind: dict[str, list[LostFact]] = {}
    for fact in lost:
        by_kind.setdefault(fact.kind, []).append(fact)
    rng = random.Random(seed)
    for facts in by_kind.values():
        rng.shuffle(facts)
    out: list[LostFact] = []
    while len(out) < size and any(by_kind.values()):
        for kind in sorted(by_kind):
            if by_kind[kind] and len(out) < size:
                out.append(by_kind[kind].pop())
    return out


def masked(fact: LostFact) -> str:
    """The line that held `fact`, its literal and every id-like token hidden: the optimizer learns the kind of
    line, and cannot copy a value it never saw."""
    return _hide_ids(fact.source.replace(fact.literal, "<value>") if fact.literal else fact.source)


def _hide_ids(line: str) -> str:
    return _ID.sub("<value>", line)


def _shown_plan(lines: Sequence[str]) -> str:
    return "\n".join(f"- {_hide_tools(_hide_ids(line))}" for line in lines)


def _hide_tools(line: str) -> str:
    """A tool's name is the task's (`verify_customer`): a line naming it fits one suite."""
    return _TOOL.sub("<tool>", line)


Placement = Literal["opening", "closing"]


def placed(parent: str, lines: Sequence[str], where: Placement) -> str:
    """`parent` with `lines` added to the learned part above the messages, or to the closing after them (a new
    closing opens with code's `CLOSING_LEAD`)."""
    base, closing = learned_part(parent), closing_part(parent)
    if where == "closing":
        return with_contract(base, "\n".join(x for x in (closing or CLOSING_LEAD, *lines) if x))
    return with_contract("\n".join([base, *lines]), closing)


def ut_step(
    lm: OptimizerLM,
    parent: str,
    lost: Sequence[LostFact],
    *,
    size: int = 4,
    seed: int = 0,
    repeats: Sequence[str] = (),
    claims: Sequence[str] = (),
    invented: Sequence[str] = (),
    restated: Sequence[str] = (),
) -> Proposal:
    """One question per kind of fact lost in a minibatch (at most three kinds), one about the first of `repeats`
    (sentences looping summaries repeated), one about the first of `claims` (sentences saying a step was done
    that was not), one about the first of `invented` (lines stating values no message held) and one about the
    first lines of `restated` (a summary that was the task's steps again) when there are any; of each reply, the
    first line that passes every check is added, and the rest are refused with their reason."""
    batch = minibatch(lost, size, seed)
    base = learned_part(parent)
    present = "\n".join((base, closing_part(parent)))
    loop, claim, made_up = list(repeats[:1]), [_hide_tools(c) for c in claims[:1]], list(invented[:1])
    plan = list(restated[:RESTATED_SHOWN])
    literals = shown_literals(batch, [*loop, *claims[:1], *made_up, *plan]) | {
        t for c in [*claims[:1], *plan] for t in _TOOL.findall(c)
    }
    examples = {fact.kind: fact for fact in reversed(batch)}  # the first of each kind in minibatch order
    # (kind, question, the line it shows): the loop first, since a loop crowds out every kind at once.
    questions: list[tuple[str, Question, str]] = [
        *(("loop", StopRepeating(fence(_hide_ids(r), "example")), r) for r in loop),
        *(("claim", StopFalseClaims(fence(_hide_ids(c), "example")), c) for c in claim),
        *(("invented", StopInventing(fence(_hide_ids(line), "example")), line) for line in made_up),
    ]
    if plan:
        questions.append(("restated", StopRestating(fence(_shown_plan(plan), "example")), "\n".join(plan)))
    for kind in sorted(examples)[:MAX_LINES]:
        shown = fence(masked(examples[kind]), "example")
        questions.append((kind, ProtectKind(KIND_TEXT.get(kind, kind), shown), examples[kind].source))
    refused: list[tuple[str, str]] = []
    kept: list[str] = []
    replies: list[str] = []
    for kind, question, source in questions:
        cue = RESTATING_CUE if kind == "restated" else ""
        reply = lm(render(question, cue), 0.7)
        replies.append(reply)
        reply = reply.strip().removeprefix(cue) if cue else reply
        take_one(reply, Checks(literals, present, (source,), {kind}), kept, refused)
    return Proposal("ut", placed(parent, kept, "opening"), tuple(kept), refused, reply="\n---\n".join(replies))


def by_call_step(lm: OptimizerLM, parent: str, lost: Sequence[LostFact], *, size: int = 4, seed: int = 0) -> Proposal:
    """One question that shows a minibatch of lost facts in the ceiling's form (`optimizer.summary.ceiling`: each
    line under the call whose result held it); the first line of the reply that passes every check is added above
    the messages; the line must name the form (a call, its result), not a kind of fact. The ceiling's summaries are
    what the other questions reach for one kind at a time: from them the reference agent solves every validation
    task at tier 0 and the 1.5B agent 4 of 10 at tier 1, against 1 of 10 from the learned text's. Only
    `benchmarks/probe_by_call_line.py` asks it: with the 0.5B summarizer on 24 train tasks the 1.5B optimizer's
    on-form line kept 12 of 49 facts against the facts-first text's 28, so the search does not."""
    batch = [f for f in minibatch(lost, size, seed) if f.source_call]
    if not batch:
        return Proposal("ut", with_contract(parent), (), [("", "no lost fact with the call that returned it")])
    shown = "\n".join(f"- from {_hide_tools(_hide_ids(f.source_call))}: {_hide_tools(masked(f))}" for f in batch)
    reply = lm(render(KeepUnderCall(fence(shown, "example"))), 0.7)
    present = "\n".join((learned_part(parent), closing_part(parent)))
    literals = shown_literals(batch, [f.source_call for f in batch]) | {
        t for f in batch for t in _TOOL.findall(f.source_call)
    }
    checks = Checks(literals, present, tuple(f.source for f in batch), {"the call and its result"})
    kept: list[str] = []
    refused: list[tuple[str, str]] = []
    take_one(reply, checks, kept, refused)
    return Proposal("ut", placed(parent, kept, "opening"), tuple(kept), refused, reply=reply)


@dataclass(frozen=True)
class Checks:
    """What a reply's line is checked against: the values and ids the optimizer was shown, the text it adds to, the
    example lines it must not copy, and the kinds of fact it must name."""

    literals: set[str]
    present: str
    sources: tuple[str, ...]
    kinds: set[str]
    # What a line must be: an instruction sentence, or (`optimizer.summary.sections`) a section of the layout.
    unfit: Callable[[str], str | None] = field(default=lambda line: _not_an_instruction(line))

    def refusal(self, line: str, kept: Sequence[str]) -> str | None:
        return (
            _refusal(line, self.literals, self.present, kept)
            or next((r for r in (_copied(line, s) for s in self.sources) if r), None)
            or self.unfit(line)
            or _untargeted(line, self.kinds)
        )


def take_one(reply: str, checks: Checks, kept: list[str], refused: list[tuple[str, str]]) -> None:
    """The first of the reply's first four lines that passes `checks` goes to `kept`; every other line to `refused`,
    with its reason."""
    lines = reply_lines(reply)[:4]
    if not lines:
        refused.append((reply.strip()[:80], "empty reply"))
    taken = False
    for line in lines:
        reason = checks.refusal(line, kept)
        if reason is None and taken:
            reason = "one line per kind of fact"
        if reason:
            refused.append((line, reason))
        else:
            kept.append(line)
            taken = True


def co_step(lm: OptimizerLM, parent: str, successes: Sequence[SummaryScore], literals: set[str]) -> Proposal:
    base = learned_part(parent)
    tokens = sum(s.tokens for s in successes) / len(successes) if successes else 0
    result = f"{len(successes)} summaries kept every needed fact, at a mean of {tokens:.0f} tokens each."
    reply = lm(render(ShortenInstructions(result, fence(base, "instructions")), SHORTEN_CUE), 0.7)
    refused: list[tuple[str, str]] = []
    kept: list[str] = []
    for line in reply_lines(reply):
        reason = _refusal(line, literals, "", kept) or _restated(line, (result, SHORTEN_CUE))
        if reason:
            refused.append((line, reason))
        else:
            kept.append(line)
    if not kept:
        refused.append((reply.strip()[:80], "empty reply"))
        return Proposal("co", with_contract(parent), (), refused, reply=reply)
    new = "\n".join(kept)
    unfit = _not_instructions(new, base)
    if unfit:
        refused.append((reply.strip()[:80], unfit))
        return Proposal("co", with_contract(parent), (), refused, reply=reply)
    collapse = len(new) < COLLAPSE_SHARE * len(base)
    new_lines = tuple(line for line in kept if line not in base)
    return Proposal("co", with_contract(new, closing_part(parent)), new_lines, refused, collapse, reply)


def reply_lines(reply: str) -> list[str]:
    out = []
    for raw in reply.splitlines():
        # bold or underline markup, which would otherwise pass into the text as stray asterisks
        line = re.sub(r"\*\*|__", "", raw).strip().strip("`").strip()
        line = re.sub(r"^(\d+[.)]|[-*•])\s*", "", line).strip()
        if line and not line.startswith(("#", "<data", "</data")):  # a heading, or the fence echoed
            out.append(line)
    return out


def shown_literals(batch: Sequence[LostFact], shown: Sequence[str] = ()) -> set[str]:
    """The lost literals and every id-like token of the lines the optimizer was shown (values hidden or not)."""
    found = {f.literal for f in batch}
    for line in [*(f.source for f in batch), *shown]:
        found |= {t for t in _ID.findall(line) if len(t) >= 3}
    return found


def _refusal(line: str, literals: set[str], base: str, kept: Sequence[str]) -> str | None:
    if any(literal and literal in line for literal in literals):
        return "names a value or id from the examples"
    if line in base or line in kept:
        return "already in the instructions"
    return None


def _restated(line: str, prompt_lines: Sequence[str]) -> str | None:
    """A line of the prompt's own (the result it was told, the cue) echoed back: not an instruction."""
    return "restates the prompt" if any(line in said or said in line for said in prompt_lines) else None


def _copied(line: str, source: str, run: int = 5) -> str | None:
    """Five words in a row from the example's line: task text (a rule's words, a product), not an instruction
    that fits every task. Values are caught apart; this catches the words around them."""
    words = re.findall(r"\w+", source.lower())
    said = " ".join(re.findall(r"\w+", line.lower()))
    for i in range(len(words) - run + 1):
        if " ".join(words[i : i + run]) in said:
            return "copies words of the example"
    return None


def _not_an_instruction(line: str) -> str | None:
    if ID_LIKE.search(line):
        return "names an id-like value"
    if _ASSIGNMENT.match(line) and not _INSTRUCTING.match(line):
        return "a `name = value` row, not an instruction"
    words = len(line.split())
    if words < 4:
        return "too short to be an instruction"
    if words > 60:
        return "too long for one instruction"
    if not _INSTRUCTING.search(line):
        return "gives no instruction (no keep, copy, include, never, ...)"
    if LOSS.search(line) and not _INSTRUCTING.match(line):
        return "describes the loss instead of instructing"
    return None


def kinds_named(text: str, kinds: Iterable[str]) -> set[str]:
    # Whole words: "id" inside "provide" or "valid" names no kind of fact.
    said = set(re.findall(r"[a-z]+", text.lower()))
    return {kind for kind in kinds if any(w in said or f"{w}s" in said for w in KIND_WORDS.get(kind, ()))}


def _untargeted(line: str, kinds: set[str]) -> str | None:
    if kinds_named(line, kinds):
        return None
    return f"names no kind of fact that was lost ({', '.join(sorted(kinds))})"


def _not_instructions(rewrite: str, parent: str) -> str | None:
    """A CO rewrite that is not instructions for every task. Asked to shorten the seed's instructions, the 1.5B
    optimizer wrote a made-up summary in its sections instead in 2 of 4 draws ("customerID = 12345"); instructions
    that fit any task state no number. A rewrite that no longer names a kind of fact its parent protected has cut
    a protecting sentence, which the question forbids, whether or not the few train tasks need that kind."""
    if re.search(r"\d", rewrite):
        return "reads as a summary, not instructions (it states numbers)"
    dropped = kinds_named(parent, KIND_TEXT) - kinds_named(rewrite, KIND_TEXT)
    if dropped:
        return f"drops a kind of fact its parent protected ({', '.join(sorted(dropped))})"
    return None


def llm_lines(text: str, seed: str) -> list[str]:
    """Sentences of `text`'s learned part and closing that the seed's learned part does not have: what the
    optimizer wrote (a UT line, or a sentence it said otherwise), however the text around it is wrapped."""
    before = {*sentences(learned_part(seed)), *sentences(CLOSING_LEAD)}
    return [s for s in sentences(f"{learned_part(text)}\n\n{closing_part(text)}") if s not in before]
