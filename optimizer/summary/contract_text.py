"""The retention contract's must-keep rules, appended to every learned text by code.

A small optimizer model forgets or softens them in a rewrite; the contract is not the optimizer's to
change, so it is appended after the learned part under a fixed header, and a rewrite only ever sees and
returns the part above it. The header also lets a report tell learned sentences from appended ones. A text
with a closing part (lines after the conversation, `optimizer.context.summary_template`) keeps it through
both: the contract goes above the messages, the closing stays below them.
"""

from __future__ import annotations

from optimizer.context.contract import summary_rules
from optimizer.context.summary_template import split_closing, with_closing

HEADER = "Always keep (acon's retention contract, appended by code):"
# The contract lines a summary can act on; `unknown` and the injection rule are about other stages.
_CLASSES = ("- skill:", "- write_receipt:", "- error_partial:", "- dynamic_state:")


def contract_lines() -> list[str]:
    return [line for line in summary_rules().splitlines() if line.startswith(_CLASSES)]


def with_contract(learned: str, closing: str | None = None) -> str:
    """`learned`'s learned part with the contract appended, then `closing` after the messages (None: the closing
    `learned` already has, if any)."""
    opening = f"{learned_part(learned).rstrip()}\n\n{HEADER}\n" + "\n".join(contract_lines())
    return with_closing(opening, closing_part(learned) if closing is None else closing)


def learned_part(text: str) -> str:
    """The text above the appended contract (all of it when there is none), without any closing part."""
    return split_closing(text)[0].split(HEADER, 1)[0].rstrip()


def closing_part(text: str) -> str:
    """The lines after the messages ("" when the text has none)."""
    return split_closing(text)[1]
