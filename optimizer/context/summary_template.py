"""Summary instructions as a LangChain `summary_prompt` template, with lines after the conversation.

LangChain's `summary_prompt` is a template: the instructions, then the `{messages}` slot (its default text and
acon's free text alike). A small summarizer reads two thousand tokens of tool output after its instructions
and writes as if it had barely read them. Lines after the messages are read: on six `reach_long` train tasks
the 0.5B model kept 3 of 16 needed facts with the seed and the contract before the messages, 5 of 12 with
one reminder after them, while a short extractive text kept 1 of 12 before and 0 of 12 with the same
reminder (`benchmarks/probe_summary_layout.py`). So the place of a line matters, in either direction, and a
learned text may end with a closing part: it then carries the slot itself, and the template it is (what
ran) is what `acon export` ships as `summary_prompt`. Which part a learned line goes to is the summary
search's knob, measured per line; what the line says is the optimizer's. The exporter and the LangChain
target strategy both build the template here, so they cannot differ.

A closing part the search builds opens with `CLOSING_LEAD`, code's words, not the optimizer's: the 0.5B
summarizer, given a bare learned line after the messages ("Identify and record the customer ID for future
reference in the processing steps."), wrote that line back as its summary; the hand-written reminder that
helped it began by saying what to do now. The lead frames the learned lines as instructions for the summary
about to be written.

Braces outside the slot are escaped in the template and read back unescaped, so a line may contain them.
"""

from __future__ import annotations

SLOT = "{messages}"
MESSAGES_BLOCK = "\n\n<messages>\nMessages to summarize:\n{messages}\n</messages>"
CLOSING_LEAD = "Now write the summary of the messages above. While you write it:"


def _escape(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _unescape(text: str) -> str:
    return text.replace("{{", "{").replace("}}", "}")


def with_closing(opening: str, closing: str) -> str:
    """A template: `opening`, the messages, then `closing` (free text when there is no closing)."""
    if not closing.strip():
        return opening
    return f"{_escape(opening.rstrip())}{MESSAGES_BLOCK}\n\n{_escape(closing.strip())}"


def split_closing(text: str) -> tuple[str, str]:
    """(opening, closing) of a text `with_closing` made; a free text is all opening."""
    if MESSAGES_BLOCK not in text:
        return text, ""
    opening, closing = text.split(MESSAGES_BLOCK, 1)
    return _unescape(opening), _unescape(closing.strip())


def summary_prompt(instructions: str) -> str:
    """A `summary_prompt` for the instructions: a template (one with the slot, as LangChain's default or a text
    with a closing part) goes as it is; free text is escaped and the slot appended."""
    if SLOT in instructions:
        return instructions
    return _escape(instructions) + MESSAGES_BLOCK
