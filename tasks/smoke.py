"""`smoke`: three short order-desk tasks small enough for the 0.5B model in an end-to-end test.

It exists to exercise the product path on a real model in seconds; the built-in suite is the one
that measures compression.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from optimizer.world import (
    CheckResult,
    Environment,
    Need,
    NeedKind,
    ReferenceStep,
    RetentionClass,
    Suite,
    SuiteSource,
    Task,
    ToolCall,
    ToolOutput,
    ToolSpec,
    UserTurn,
)

ORDERS: dict[str, dict[str, Any]] = {
    "ORD-1001": {"customer": "Ana Ruiz", "status": "shipped", "total": 19.99},
    "ORD-2002": {"customer": "Maria Keller", "status": "processing", "total": 42.50},
    "ORD-3003": {"customer": "Tom Berg", "status": "delivered", "total": 75.00},
}

TOOLS = (
    ToolSpec(
        "get_order",
        "Look up one order by its id.",
        {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
        retention_class=RetentionClass.DYNAMIC_STATE,
    ),
    ToolSpec(
        "search_orders",
        "Find orders by customer name.",
        {"type": "object", "properties": {"customer": {"type": "string"}}, "required": ["customer"]},
        retention_class=RetentionClass.STATIC,
    ),
    ToolSpec(
        "refund_order",
        "Refund an order. Returns a refund receipt.",
        {
            "type": "object",
            "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
            "required": ["order_id", "amount"],
        },
        side_effect=True,
    ),
)


class OrderDesk(Environment):
    def __init__(self, expected_answer: str, expected_refund: tuple[str, float] | None) -> None:
        self.expected_answer = expected_answer
        self.expected_refund = expected_refund
        self.refunds: list[tuple[str, float]] = []

    def tools(self, turn: int) -> Sequence[ToolSpec]:
        return TOOLS

    def call(self, call: ToolCall, turn: int) -> ToolOutput:
        args = call.arguments
        if call.name == "get_order":
            order = ORDERS.get(str(args.get("order_id", "")).strip())
            if order is None:
                return ToolOutput(f"Error: order {args.get('order_id')!r} not found.", is_error=True)
            return ToolOutput(json.dumps({"order_id": args["order_id"], **order}))
        if call.name == "search_orders":
            name = str(args.get("customer", "")).lower()
            hits = [
                {"order_id": k, "customer": v["customer"]} for k, v in ORDERS.items() if name in v["customer"].lower()
            ]
            return ToolOutput(json.dumps({"matches": hits}))
        if call.name == "refund_order":
            order_id = str(args.get("order_id", ""))
            try:
                amount = float(args.get("amount", "nan"))
            except (TypeError, ValueError):
                return ToolOutput("Error: amount must be a number.", is_error=True)
            if order_id not in ORDERS:
                return ToolOutput(f"Error: order {order_id!r} not found.", is_error=True)
            self.refunds.append((order_id, amount))
            receipt = f"refund_id: RF-{len(self.refunds):04d}-{order_id[-4:]} status: done"
            return ToolOutput.vouched(receipt)
        return ToolOutput(f"Error: unknown tool {call.name!r}.", is_error=True)

    def check(self, answers: Sequence[str | None]) -> CheckResult:
        reasons = []
        answer = (answers[0] or "") if answers else ""
        if self.expected_answer.lower() not in answer.lower():
            reasons.append(f"answer {answer[:80]!r} does not contain {self.expected_answer!r}")
        if self.expected_refund is None and self.refunds:
            reasons.append("refund issued although none was asked for")
        if self.expected_refund is not None:
            order_id, amount = self.expected_refund
            matching = [r for r in self.refunds if r[0] == order_id and abs(r[1] - amount) < 0.01]
            if not matching:
                reasons.append(f"no refund of {self.expected_refund[1]} on {self.expected_refund[0]}")
            if len(self.refunds) > 1:
                return CheckResult(False, (*reasons, "duplicate refund"), ("duplicate write",))
        return CheckResult(not reasons, tuple(reasons))


def _tasks() -> tuple[Task, ...]:
    refund_receipt = "RF-0001-3003"
    return (
        Task(
            "smoke-status",
            "smoke",
            (UserTurn("What is the status of order ORD-1001? Answer with the status."),),
            lambda: OrderDesk("shipped", None),
            reference=(
                ReferenceStep(0, ToolCall("r1", "get_order", {"order_id": "ORD-1001"})),
                ReferenceStep(0, answer="shipped", needs=(Need(NeedKind.VALUE, "shipped", guess="unknown"),)),
            ),
            max_steps_per_turn=6,
        ),
        Task(
            "smoke-total",
            "smoke",
            (UserTurn("What is the total of Maria Keller's order? Find her order first, then answer with the total."),),
            lambda: OrderDesk("42.5", None),
            reference=(
                ReferenceStep(0, ToolCall("r1", "search_orders", {"customer": "Maria Keller"})),
                ReferenceStep(
                    0,
                    ToolCall("r2", "get_order", {"order_id": "ORD-2002"}),
                    needs=(Need(NeedKind.VALUE, "ORD-2002", argument="order_id", guess="ORD-2020"),),
                ),
                ReferenceStep(0, answer="42.5", needs=(Need(NeedKind.VALUE, "42.5", guess="45.0"),)),
            ),
            max_steps_per_turn=6,
        ),
        Task(
            "smoke-refund",
            "smoke",
            (UserTurn("Refund order ORD-3003 in full (look up its total first) and tell me the refund id."),),
            lambda: OrderDesk(refund_receipt, ("ORD-3003", 75.0)),
            reference=(
                ReferenceStep(0, ToolCall("r1", "get_order", {"order_id": "ORD-3003"})),
                ReferenceStep(
                    0,
                    ToolCall("r2", "refund_order", {"order_id": "ORD-3003", "amount": 75.0}),
                    needs=(Need(NeedKind.VALUE, "75.0", argument="amount", guess=70.0),),
                ),
                ReferenceStep(
                    0,
                    answer=refund_receipt,
                    needs=(
                        Need(
                            NeedKind.RECEIPT,
                            refund_receipt,
                            repeat=ToolCall("r2", "refund_order", {"order_id": "ORD-3003", "amount": 75.0}),
                        ),
                    ),
                ),
            ),
            max_steps_per_turn=6,
        ),
    )


class SmokeSuite(SuiteSource):
    """Three order-desk tasks for end-to-end checks on a real model."""

    type: Literal["smoke"] = "smoke"
    train_ids: tuple[str, ...] = Field(("smoke-total",), description="Tasks in the train split.")

    def load(self) -> Suite:
        tasks = _tasks()
        train = frozenset(self.train_ids)
        return Suite("smoke", tasks, train, frozenset(t.id for t in tasks) - train)
