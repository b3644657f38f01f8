"""A section for the layout, written by the optimizer: the edit a small summarizer follows.

A small summarizer follows a text's sections more than its sentences. With the 0.5B summarizer on 8 `reach_long`
train tasks, LangChain's prompt restated the task in 10 of 12 summaries and acon's written layouts in none; the
contract's sentences before the messages did not stop it (8 of 12, `benchmarks/probe_summary_layout.py`), and
every sentence the 1.5B optimizer wrote against a fault it was shown left that fault where it was. The facts-first
layout has no section for a skill's rules, and its summaries kept none of the 3 rules its train tasks needed.

So when a start is a layout (`NAME: what goes under it` lines) and its summaries lost a kind of fact no section
names, the optimizer is shown the sections as written, the kind and one line that held it (values hidden), and asked
for one new section (a name alone is asked, second, what goes under it); the line that passes the checks goes in
before the last section, so that a closing `PROGRESS` or `TODO` stays last. The checks are the UT line's (no value
or id from the examples, no five words of the example's line, names the lost kind) with the section's shape in
place of an instruction's, and a section whose words are nearly all the question's is refused.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from optimizer.summary.contract_text import closing_part, learned_part, with_contract
from optimizer.summary.rewrite import (
    ID_LIKE,
    KIND_TEXT,
    LOSS,
    Checks,
    OptimizerLM,
    Proposal,
    kinds_named,
    masked,
    minibatch,
    render,
    reply_lines,
    shown_literals,
    take_one,
)
from optimizer.summary.screen import LostFact
from optimizer.untrusted import fence

_SECTION = re.compile(r"^(?P<name>[A-Z]{2,}(?:[ &/-]+[A-Z]{2,})*):\s*(?P<body>.*)$")
# Kinds a section can be asked for: an error and a paging warning share one section in both of acon's layouts.
MAX_SECTIONS = 2
SECTION_CUE = "New section:"
_WORDS = (4, 40)
ECHO_SHARE = 0.8  # of a section's words found in the question's description of the kind: its words, not the optimizer's
_SNAKE_NAME = re.compile(r"^(\s*(?:[-*]\s*)?)([A-Z]{2,}(?:_[A-Z]{2,})+)(?=\s*:)", re.MULTILINE)
_BARE_NAME = re.compile(r"^[A-Z]{2,}(?:[ _&/-]+[A-Z]{2,}){0,5}$")


@dataclass(frozen=True)
class AddSection:
    """A summarizer condenses the earlier steps of an AI agent's work into a summary with the sections listed
    below, in that order. Its summaries lost the kind of information described below, which no section holds; an
    example line that held it is shown with its values hidden. Write one new section for the summary that holds
    this kind of information: one line, the section's name in capital letters, a colon, then what goes under it.
    The line must fit any task, so it names no value, id or name. Reply with that one line only."""

    sections: str
    lost: str
    example_line: str


@dataclass(frozen=True)
class DescribeSection:
    """A summarizer condenses the earlier steps of an AI agent's work into a summary with the sections listed
    below, in that order. A new section, named below, is to hold the kind of information described below, which
    its summaries lost. Write what goes under this section, as the summarizer will read it. The line must fit any
    task, so it names no value, id or name. Reply with that one line only."""

    sections: str
    lost: str
    name: str


def sections_of(text: str) -> list[tuple[str, str]]:
    """(name, paragraph) of each section line in `text`'s learned part: a paragraph runs to the next section or
    blank line."""
    out: list[tuple[str, str]] = []
    open_paragraph = False
    for raw in learned_part(text).splitlines():
        line = raw.strip()
        match = _SECTION.match(line)
        if match:
            out.append((match["name"], line))
        elif out and line and open_paragraph:
            out[-1] = (out[-1][0], f"{out[-1][1]} {line}")
        open_paragraph = bool(line) and (bool(match) or open_paragraph)
    return out


def uncovered(lost: Sequence[LostFact], sections: Sequence[tuple[str, str]]) -> list[str]:
    """Kinds lost that no section's paragraph names, most lost first."""
    named = kinds_named(" ".join(body for _, body in sections), KIND_TEXT)
    counts = Counter(f.kind for f in lost if f.kind in KIND_TEXT and f.kind not in named)
    return sorted(counts, key=lambda kind: (-counts[kind], kind))


def with_section(parent: str, section: str) -> str:
    """`parent` with `section` as its own line before the last section line of its learned part."""
    lines = learned_part(parent).splitlines()
    last = max(i for i, line in enumerate(lines) if _SECTION.match(line.strip()))
    return with_contract("\n".join([*lines[:last], section, *lines[last:]]), closing_part(parent))


def section_step(lm: OptimizerLM, parent: str, lost: Sequence[LostFact], *, size: int = 8, seed: int = 0) -> Proposal:
    """One question per kind lost that no section names (at most `MAX_SECTIONS`), each showing the first lost line
    of that kind in a minibatch; every section that passes the checks is added."""
    sections = sections_of(parent)
    if len(sections) < 2:
        return Proposal("section", with_contract(parent), (), [("", "the text is not a layout of sections")])
    kinds = uncovered(lost, sections)[:MAX_SECTIONS]
    if not kinds:
        return Proposal("section", with_contract(parent), (), [("", "every lost kind has a section")])
    batch = minibatch([f for f in lost if f.kind in kinds], size, seed)
    names = {name for name, _ in sections}
    present = "\n".join((learned_part(parent), closing_part(parent)))
    literals = shown_literals(batch)
    # As written, not by name: shown only the names, the 1.5B optimizer answered with a name alone in 3 of 3 asks
    # ("SKILL AND POLICY RULES"), no line saying what goes under it.
    listed = "\n".join(body for _, body in sections)
    kept: list[str] = []
    refused: list[tuple[str, str]] = []
    replies: list[str] = []
    text = parent
    for kind in kinds:
        example = next(f for f in batch if f.kind == kind)
        line, said = _asked(lm, listed, kind, masked(example))
        replies += said
        checks = Checks(
            literals, present, (example.source,), {kind}, unfit=partial(_not_a_section, names=names, kind=kind)
        )
        before = len(kept)
        take_one(line, checks, kept, refused)
        if len(kept) > before:
            names.add(_SECTION.match(kept[-1])["name"])  # type: ignore[index]
            text = with_section(text, kept[-1])
    return Proposal("section", with_contract(text), tuple(kept), refused, reply="\n---\n".join(replies))


def _asked(lm: OptimizerLM, listed: str, kind: str, example: str) -> tuple[str, list[str]]:
    """The section the optimizer wrote, and its replies. A name alone (the 1.5B optimizer's answer in 4 of 6 asks
    on 8 `reach_long` train tasks: "SKILL AND POLICY RULES") is asked, as a second question, what goes under it."""
    reply = lm(render(AddSection(listed, KIND_TEXT[kind], fence(example, "example")), SECTION_CUE), 0.7)
    said = _SNAKE_NAME.sub(lambda m: m[1] + m[2].replace("_", " "), reply.strip().removeprefix(SECTION_CUE))
    first = next(iter(reply_lines(said)), "")
    if not _BARE_NAME.match(first):
        return said, [reply]
    name = first.replace("_", " ")
    body = lm(render(DescribeSection(listed, KIND_TEXT[kind], name), f"{name}:"), 0.7)
    under = next(iter(reply_lines(body.strip().removeprefix(f"{name}:"))), "")
    return f"{name}: {under.removeprefix(f'{name}:').strip()}", [reply, body]


def _not_a_section(line: str, names: set[str], kind: str) -> str | None:
    match = _SECTION.match(line)
    if not match:
        return "not a section line (NAME: what goes under it)"
    if match["name"] in names:
        return "a section of that name is there already"
    # "REPORT: a rule from a skill or policy the agent read, which ..." and "SKILL OR POLICY FOLLOWED: every rule from
    # a skill or policy the agent read, which ..." (the 1.5B optimizer): the question's words under a name of its own.
    body, asked = (re.findall(r"[a-z]+", t.lower()) for t in (match["body"], KIND_TEXT[kind]))
    if sum(word in asked for word in body) >= ECHO_SHARE * len(body):
        return "restates the question"
    if ID_LIKE.search(line):
        return "names an id-like value"
    # "AGENT: No specific information about the lost rule." (the 1.5B optimizer): the failure, not what goes under it.
    if LOSS.search(match["body"]):
        return "describes the loss, not what the section holds"
    words = len(match["body"].split())
    if words < _WORDS[0]:
        return "too short to say what the section holds"
    if words > _WORDS[1]:
        return "too long for one section"
    return None
