"""The retention contract's must-keep rules, appended to every learned text by code.

A small optimizer model forgets or softens them in a rewrite; the contract is not the optimizer's to
change, so it is appended after the learned part under a fixed header, and a rewrite only ever sees and
returns the part above it. The header also lets a report tell learned sentences from appended ones.
"""

from __future__ import annotations

from optimizer.context.contract import summary_rules

HEADER = "Always keep (acon's retention contract, appended by code):"
# The contract lines a summary can act on; `unknown` and the injection rule are about other stages.
_CLASSES = ("- skill:", "- write_receipt:", "- error_partial:", "- dynamic_state:")


def contract_lines() -> list[str]:
    return [line for line in summary_rules().splitlines() if line.startswith(_CLASSES)]


def with_contract(learned: str) -> str:
    return f"{learned_part(learned).rstrip()}\n\n{HEADER}\n" + "\n".join(contract_lines())


def learned_part(text: str) -> str:
    """The text above the appended contract (all of it when there is none)."""
    return text.split(HEADER, 1)[0].rstrip()
