"""The retention contract: one table, read by every stage that can cut content.

Write-time truncation, clearing, summarization and the pre-send budget all ask this table what they
may do to a class; none of them has rules of its own. A guideline's policy chooses *within* these
bounds (see `optimizer.context.guideline`), and the candidate validator rejects policies outside them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from optimizer.world.retention import RetentionClass


class Action(StrEnum):
    """What a policy does with an old result of a class."""

    KEEP = "keep"  # verbatim
    COMPRESS = "compress"  # rewritten by an LLM compressor under the contract's summary rule
    CLEAR = "clear"  # replaced by a placeholder with a recall handle


@dataclass(frozen=True)
class ClassContract:
    retention: RetentionClass
    allowed: frozenset[Action]
    # Runtime-vouched must-keep lines survive every cut, whatever the action.
    keeps_must_lines: bool
    # Only superseded reads may go: the latest result of the same call stays verbatim.
    latest_kept: bool
    # What a summary must preserve; inserted into every compressor prompt.
    summary_rule: str
    # Order in which the pre-send budget cuts classes (lower first); None = never cut.
    budget_order: int | None
    # Must be pinned (kept verbatim outside summaries) by any guideline the optimizer proposes.
    must_pin: bool = False


CONTRACT: dict[RetentionClass, ClassContract] = {
    c.retention: c
    for c in (
        ClassContract(
            RetentionClass.SKILL, frozenset({Action.KEEP, Action.COMPRESS}), True, False,
            "Keep skill rules verbatim, with their rule ids and the skill version.", None, must_pin=True,
        ),
        ClassContract(
            RetentionClass.WRITE_RECEIPT, frozenset({Action.KEEP, Action.COMPRESS}), True, False,
            "Keep every write receipt's resource ids and status; a write that happened must stay visible.",
            None, must_pin=True,
        ),
        ClassContract(
            RetentionClass.ERROR_PARTIAL, frozenset({Action.KEEP, Action.COMPRESS, Action.CLEAR}), True, False,
            "Keep error messages and partial-result warnings (e.g. 'showing 1-20 of 47') word for word.", 3,
        ),
        ClassContract(
            RetentionClass.DYNAMIC_STATE, frozenset({Action.KEEP, Action.COMPRESS, Action.CLEAR}), True, True,
            "Keep the latest value of each state read (balances, stock, statuses); older values may go.", 1,
        ),
        ClassContract(
            RetentionClass.STATIC, frozenset({Action.KEEP, Action.COMPRESS, Action.CLEAR}), True, False,
            "Static content (search hits, file reads, docs) may be summarized; keep ids and values the task uses.",
            0,
        ),
        ClassContract(
            RetentionClass.UNKNOWN, frozenset({Action.KEEP}), True, False,
            "Keep unclassified content.", 2,
        ),
    )
}


def contract_for(retention: RetentionClass | None) -> ClassContract:
    return CONTRACT[retention or RetentionClass.UNKNOWN]


def may(retention: RetentionClass | None, action: Action) -> bool:
    return action in contract_for(retention).allowed


def summary_rules() -> str:
    """The contract's summary obligations as a bullet list for compressor prompts."""
    return "\n".join(f"- {c.retention.value}: {c.summary_rule}" for c in CONTRACT.values())
