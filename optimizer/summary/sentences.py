"""The sentences of an instruction text, where they sit in it, and what counts as the same sentence.

Instruction texts are wrapped at a line width, so a line is not a unit of meaning: a paraphrase of one sentence
would change two wrapped lines, and a line-by-line comparison would credit the optimizer with the seed's words
around it. A sentence ends at `.`, `!` or `?` before white space, at a line ending in a colon (a lead-in such as
the closing's "While you write it:"), at a blank line, and before a line that opens a section (`VARIABLES:`) or a
bullet; two sentences are the same when their words are, however they are wrapped.
"""

from __future__ import annotations

import re

# A sentence's last character, or the break before a paragraph, a section line or a bullet.
_BREAK = re.compile(r"(?<=[.!?])\s+|(?<=:)[ \t]*\n|\n\s*\n|\n(?=[A-Z][A-Z &/]+:|\s*(?:[-*•]|\d+[.)])\s)")
_MARKUP = re.compile(r"\*\*|__")
_BULLET = re.compile(r"^(?:\d+[.)]|[-*•])\s*")


def spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence in `text`, leading and trailing white space excluded."""
    out = []
    start = 0
    for brk in [*_BREAK.finditer(text), None]:
        end = brk.start() if brk else len(text)
        piece = text[start:end]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            out.append((start + lead, start + len(piece.rstrip())))
        start = brk.end() if brk else end
    return out


def sentences(text: str) -> list[str]:
    return [normal(text[a:b]) for a, b in spans(text)]


def normal(sentence: str) -> str:
    """One line, single spaces, no bullet, emphasis or enclosing backticks: the form two wrappings of a sentence
    share."""
    return _BULLET.sub("", " ".join(_MARKUP.sub("", sentence).split()).strip("`").strip()).strip()


def replaced(text: str, span: tuple[int, int], sentence: str) -> str:
    """`text` with the sentence at `span` replaced by `sentence`, written on one line where the old one began."""
    start, end = span
    return text[:start] + " ".join(sentence.split()) + text[end:]
