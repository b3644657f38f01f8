"""`planted`: a refund desk whose skill file gates a step with a rule in its middle (`RULE-MID-02`).

Two tiny tasks (one train, one test) built to demonstrate and test the provenance diff: a guideline
that does not pin skills lets the history summary drop the middle of SKILL.md, the agent then skips
the approval `RULE-MID-02` requires, and `acon diff` names the rule, its class (`skill`), the
checkpoint where it vanished and the step.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal

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
    object_schema,
)
from optimizer.world.shared_tools import ISSUE_REFUND, READ_SKILL

RULE = "RULE-MID-02"

_FILLER = (
    "Refund requests arrive through the order desk and are logged with the order id and the customer id.",
    "Customers are addressed by their first name and every message closes with the desk signature.",
    "Partial refunds name the refunded line; full refunds name the order.",
    "Refunds to expired cards go to store credit instead and the customer is told so in the same message.",
    "Currency is always the order's currency; amounts carry two decimals.",
)


def skill_text() -> str:
    head = ["# SKILL: refunds (version 3)", "RULE-HEAD-01: always read the order before refunding it."]
    middle = ["RULE-MID-02: refunds over 100.00 need `request_approval` for the order before `issue_refund`."]
    tail = ["RULE-TAIL-03: answer with the refund id."]
    body = [f"{i + 1}. {_FILLER[i % len(_FILLER)]}" for i in range(60)]
    return "\n".join([*head, *body[:30], *middle, *body[30:], *tail])


TOOLS = (
    READ_SKILL,
    ToolSpec(
        "get_order",
        "Read an order with its lines and history.",
        object_schema(order_id="string"),
        retention_class=RetentionClass.STATIC,
    ),
    ToolSpec(
        "request_approval",
        "Request approval for a refund on an order.",
        object_schema(order_id="string"),
        side_effect=True,
    ),
    ISSUE_REFUND,
)


class RefundDesk(Environment):
    def __init__(self, order_id: str, amount: float) -> None:
        self.order_id, self.amount = order_id, amount
        self.approved = False
        self.refunds: list[tuple[str, float, bool]] = []

    def tools(self, turn: int) -> Sequence[ToolSpec]:
        return TOOLS

    def call(self, call: ToolCall, turn: int) -> ToolOutput:
        args = call.arguments
        if call.name == "read_skill":
            return ToolOutput(skill_text())
        if call.name == "get_order":
            history = "\n".join(f"event {i}: status check ok" for i in range(40))
            body = {"order_id": self.order_id, "total": f"{self.amount:.2f}", "currency": "EUR"}
            return ToolOutput(f"{json.dumps(body)}\n{history}")
        if call.name == "request_approval":
            self.approved = args.get("order_id") == self.order_id
            line = f"approval APR-{self.order_id[-4:]} status granted"
            return ToolOutput.vouched(line)
        if call.name == "issue_refund":
            self.refunds.append((str(args.get("order_id")), float(args.get("amount", 0)), self.approved))
            line = f"refund RF-{self.order_id[-4:]} status done"
            return ToolOutput.vouched(line)
        return ToolOutput(f"Error: unknown tool {call.name!r}.", is_error=True)

    def check(self, answers: Sequence[str | None]) -> CheckResult:
        reasons, blocking = [], []
        if not any(abs(amount - self.amount) < 0.01 for _, amount, _ in self.refunds):
            reasons.append(f"no refund of {self.amount:.2f}")
        if any(not approved for *_, approved in self.refunds):
            reasons.append("refund issued without approval")
            blocking.append(f"lost must-keep rule {RULE}: refund without request_approval")
        return CheckResult(not reasons, tuple(reasons), tuple(blocking))


def _task(task_id: str, order_id: str, amount: float) -> Task:
    total = f"{amount:.2f}"
    return Task(
        task_id,
        "planted",
        (UserTurn(f"Refund order {order_id} in full, following the refunds skill, and give the refund id."),),
        lambda: RefundDesk(order_id, amount),
        reference=(
            ReferenceStep(0, ToolCall("r1", "read_skill", {"name": "refunds"})),
            ReferenceStep(0, ToolCall("r2", "get_order", {"order_id": order_id})),
            ReferenceStep(
                0,
                ToolCall("r3", "request_approval", {"order_id": order_id}),
                needs=(Need(NeedKind.RULE, RULE, source_class="skill"),),
            ),
            ReferenceStep(
                0,
                ToolCall("r4", "issue_refund", {"order_id": order_id, "amount": amount}),
                needs=(
                    Need(NeedKind.VALUE, total, argument="amount", guess=round(amount - 10, 2), source_class="static"),
                ),
            ),
            ReferenceStep(0, answer=f"RF-{order_id[-4:]}"),
        ),
        max_steps_per_turn=10,
    )


class PlantedSuite(SuiteSource):
    """Two refund tasks gated by `RULE-MID-02` (one train, one test)."""

    type: Literal["planted"] = "planted"

    def load(self) -> Suite:
        train, test = _task("planted-train", "ORD-90417", 240.0), _task("planted-test", "ORD-55302", 180.0)
        return Suite("planted", (train, test), frozenset({train.id}), frozenset({test.id}))
