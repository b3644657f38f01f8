"""Checker building blocks shared by the families: a verdict collector and tolerant answer matching.

Answers are free text from any agent, so matching is forgiving where it is safe (case of ids, thousands
separators, an optional currency) and strict where a wrong value would slip through (whole numbers only).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from optimizer.world.task import CheckResult
from tasks.builtin.env import OpsEnv

Key = Callable[[Mapping[str, Any]], object]

# What makes two writes "the same write": a repeat of one of these is a duplicate.
DEDUPE: dict[str, Key] = {
    "request_approval": lambda a: (a["order_id"], a["line_id"]),
    "issue_refund": lambda a: (a["order_id"], a["line_id"]),
    "send_email": lambda a: a["customer_id"],
    "reserve_stock": lambda a: (a["order_id"], a["sku"]),
    "add_store_credit": lambda a: a["customer_id"],
    "create_ticket": lambda a: a["order_id"],
    "create_quote": lambda a: a["customer_id"],
    "escalate_ticket": lambda a: a["ticket_id"],
    "reply_ticket": lambda a: a["ticket_id"],
}


class Verdict:
    """Collects reasons; `blocking` ones are also reported as blocking faults."""

    def __init__(self, env: OpsEnv, answers: Sequence[str | None]) -> None:
        self.env = env
        self.answer = answers[0] if answers else None
        self.reasons: list[str] = []
        self.blocking: list[str] = []
        if not self.answer or not self.answer.strip():
            self.fail("no final answer was given")
        self._duplicates()

    def fail(self, reason: str, *, blocking: bool = False) -> None:
        self.reasons.append(reason)
        if blocking:
            self.blocking.append(reason)

    def require_step(self, done: bool, step: str) -> bool:
        """A required write that did not happen; blocking when the agent nevertheless finished."""
        if not done:
            claimed = bool(self.answer and self.answer.strip())
            self.fail(
                f"finish claimed without required step: {step}" if claimed else f"required step not done: {step}",
                blocking=claimed,
            )
        return done

    def answer_mentions(self, literal: str, what: str) -> None:
        if self.answer and not mentions(self.answer, literal):
            self.fail(f"final answer does not report {what} {literal}")

    def result(self) -> CheckResult:
        return CheckResult(not self.reasons, tuple(self.reasons), tuple(self.blocking))

    def _duplicates(self) -> None:
        counts: Counter[tuple[str, object]] = Counter()
        for write in self.env.writes:
            if write.tool in DEDUPE:
                counts[(write.tool, DEDUPE[write.tool](write.arguments))] += 1
        for (tool, key), n in sorted(counts.items(), key=str):
            if n > 1:
                self.fail(f"duplicate write: {tool} for {_show(key)} succeeded {n} times", blocking=True)


def _show(key: object) -> str:
    return "/".join(map(str, key)) if isinstance(key, tuple) else str(key)


def mentions(text: str, literal: str) -> bool:
    return literal.lower() in text.lower()


def mentions_money(text: str, amount: float) -> bool:
    """`1,314.45` or `1314.45`, not as part of a longer number."""
    plain = f"{amount:.2f}"
    grouped = f"{amount:,.2f}"
    pattern = "|".join(re.escape(v) for v in {plain, grouped})
    return re.search(rf"(?<![\d.,])(?:{pattern})(?![\d])", text) is not None


_ID = re.compile(r"\b[A-Za-z0-9]+-[A-Za-z0-9-]+\b")


def mentions_number(text: str, number: int) -> bool:
    """`number` as a whole number, ignoring digits inside ids such as `RSV-1253A` or `SKU-40417`."""
    return re.search(rf"(?<![\d.,]){number}(?![\d]|[.,]\d)", _ID.sub(" ", text)) is not None
