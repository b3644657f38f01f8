"""`reach`: a shop desk within a small model's reach, for measuring how far tier 0 predicts tier 1.

The built-in suite's tasks take 6-20 steps over several tools and the 1.5B local agent solves almost
none of them with full context, so a tier-1 failure there says nothing about compression. These six
tasks keep what compression can lose (a skill rule in the middle of SKILL.md, a fact in the middle of
a long static read, a "page 1 of 2" warning, an error that names the right id, state read before a
write, and a write receipt the answer quotes) but take two to four steps each, with instructions that
name the order of work, so that the agent's own planning is not what is measured.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

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
    object_schema,
)
from optimizer.world.shared_tools import (
    GET_PRODUCT,
    GET_STOCK,
    LIST_ORDERS,
    READ_SKILL,
    RESERVE_STOCK,
    SEND_GIFT_CARD,
    VERIFY_CUSTOMER,
)

SKILL = RetentionClass.SKILL.value
STATIC = RetentionClass.STATIC.value
ERROR_PARTIAL = RetentionClass.ERROR_PARTIAL.value
DYNAMIC = RetentionClass.DYNAMIC_STATE.value
RECEIPT = RetentionClass.WRITE_RECEIPT.value

GIFT_RULE = "RULE-GC-05"
_SKILL_FILLER = (
    "Gift cards are issued in the customer's account currency.",
    "A gift card message is at most one sentence and signed by the desk.",
    "Gift cards expire after twelve months; the customer is not told the expiry unless asked.",
    "Never combine two gift cards into one; issue each request separately.",
    "Log the reason for the gift card in the ticket, not on the card.",
)
_SHEET_FILLER = (
    "material: recycled aluminium, anodized finish",
    "packaging: cardboard sleeve, no plastic",
    "warranty: 24 months from delivery",
    "care: wipe with a dry cloth",
    "origin: assembled in Porto",
    "certifications: CE, RoHS",
)


def skill_text() -> str:
    body = [f"{i + 1}. {_SKILL_FILLER[i % len(_SKILL_FILLER)]}" for i in range(24)]
    rule = f"{GIFT_RULE}: call verify_customer for the customer before send_gift_card."
    return "\n".join(["# SKILL: gift cards", *body[:12], rule, *body[12:], "Answer with the gift card id."])


def product_sheet(sku: str, price: str) -> str:
    body = [f"{sku} spec {i + 1:02d}: {_SHEET_FILLER[i % len(_SHEET_FILLER)]}" for i in range(44)]
    return "\n".join([f"# Product sheet {sku}", *body[:22], f"unit price: {price} EUR", *body[22:]])


TOOLS = (
    READ_SKILL,
    GET_PRODUCT,
    ToolSpec(
        "get_customer",
        "Look up a customer by email; returns the customer id.",
        object_schema(email="string"),
        retention_class=RetentionClass.STATIC,
    ),
    VERIFY_CUSTOMER,
    SEND_GIFT_CARD,
    LIST_ORDERS,
    ToolSpec(
        "get_order",
        "Read one order's status by order id.",
        object_schema(order_id="string"),
        retention_class=RetentionClass.DYNAMIC_STATE,
    ),
    GET_STOCK,
    RESERVE_STOCK,
)


@dataclass
class World:
    """One task's shop: catalog, customers, orders, stock, and every write the agent made."""

    prices: dict[str, str] = field(default_factory=dict)
    customers: dict[str, str] = field(default_factory=dict)  # email -> id
    orders: dict[str, list[str]] = field(default_factory=dict)  # customer id -> order ids
    statuses: dict[str, str] = field(default_factory=dict)
    stock: dict[str, int] = field(default_factory=dict)
    verified: set[str] = field(default_factory=set)
    writes: list[tuple[str, dict, bool]] = field(default_factory=list)  # (tool, arguments, verified first)


PAGE_SIZE = 3
ORDER_IDS = ("ORD-5101", "ORD-5102", "ORD-5107", "ORD-5110", "ORD-5114")


class ShopDesk(Environment):
    def __init__(self, world: World, expected: tuple[str, ...], check_writes, tools: Sequence[ToolSpec]) -> None:
        self.world = world
        self._tools = tuple(tools)
        self.expected = expected
        self.check_writes = check_writes

    def tools(self, turn: int) -> Sequence[ToolSpec]:
        return self._tools

    def call(self, call: ToolCall, turn: int) -> ToolOutput:
        w, args = self.world, call.arguments
        arg = {k: str(v).strip() for k, v in args.items()}
        if call.name == "read_skill":
            return ToolOutput(skill_text())
        if call.name in ("get_product", "get_stock", "reserve_stock") and arg.get("sku", "").isdigit():
            arg["sku"] = f"SKU-{arg['sku']}"  # the model dropping the prefix is not what this suite measures
        if call.name == "get_product":
            if arg.get("sku") not in w.prices:
                return _error(f"Error: unknown SKU {arg.get('sku')!r}.")
            return ToolOutput(product_sheet(arg["sku"], w.prices[arg["sku"]]))
        if call.name == "get_customer":
            customer = w.customers.get(arg.get("email", "").lower())
            if customer is None:
                return _error(f"Error: no customer with email {arg.get('email')!r}.")
            return ToolOutput(json.dumps({"email": arg["email"], "customer_id": customer}))
        if call.name == "verify_customer":
            if arg.get("customer_id") not in w.customers.values():
                return _error(f"Error: unknown customer {arg.get('customer_id')!r}.")
            w.verified.add(arg["customer_id"])
            line = f"verification VRF-{arg['customer_id'][-3:]} status passed"
            return ToolOutput.vouched(line)
        if call.name == "send_gift_card":
            customer = arg.get("customer_id", "")
            w.writes.append((call.name, dict(args), customer in w.verified))
            line = f"gift card GC-{len(w.writes):02d}{customer[-3:]} status sent"
            return ToolOutput.vouched(line)
        if call.name == "list_orders":
            ids = w.orders.get(arg.get("customer_id", ""))
            if ids is None:
                return _error(f"Error: unknown customer {arg.get('customer_id')!r}.")
            try:
                page = max(1, int(float(arg.get("page", "1"))))
            except ValueError:
                return _error("Error: page must be an integer.")
            pages = max(1, -(-len(ids) // PAGE_SIZE))
            shown = ids[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
            lines = [f"order {order_id}" for order_id in shown]
            if page > pages:
                return _error(f"Error: page {page} does not exist; the last page is {pages}.")
            warning = (
                f"page {page} of {pages}: more orders on the next page"
                if page < pages
                else f"page {page} of {pages}: no more orders"
            )
            return ToolOutput("\n".join([*lines, warning]), partial=page < pages, must_keep=(warning,))
        if call.name == "get_order":
            order_id = arg.get("order_id", "")
            if order_id not in w.statuses:
                near = next((o for o in w.statuses if o.endswith(order_id.split("-")[-1].lstrip("0"))), None)
                hint = f" Did you mean {near}?" if near else ""
                return _error(f"Error: order {order_id!r} not found.{hint}")
            return ToolOutput(json.dumps({"order_id": order_id, "status": w.statuses[order_id]}))
        if call.name == "get_stock":
            sku = arg.get("sku", "")
            if sku not in w.stock:
                return _error(f"Error: unknown SKU {sku!r}.")
            return ToolOutput(json.dumps({"sku": sku, "units_in_stock": w.stock[sku]}))
        if call.name == "reserve_stock":
            w.writes.append((call.name, {**args, "sku": arg.get("sku", "")}, True))
            line = f"reservation RSV-{len(w.writes):02d}{arg.get('sku', '')[-2:]} status held"
            return ToolOutput.vouched(line)
        return _error(f"Error: unknown tool {call.name!r}.")

    def check(self, answers: Sequence[str | None]) -> CheckResult:
        answer = (answers[0] or "") if answers else ""
        reasons = [
            f"answer {answer[:80]!r} lacks {want!r}" for want in self.expected if want.lower() not in answer.lower()
        ]
        blocking: list[str] = []
        write_reasons, write_blocking = self.check_writes(self.world.writes)
        reasons += write_reasons
        blocking += write_blocking
        return CheckResult(not reasons, tuple(reasons), tuple(blocking))


def _error(text: str) -> ToolOutput:
    return ToolOutput(text, is_error=True, must_keep=(text,))


def _no_writes(writes: list) -> tuple[list[str], list[str]]:
    return (["wrote although the task only reads"], []) if writes else ([], [])


def _one_write(tool: str, **expected: object):
    def check(writes: list) -> tuple[list[str], list[str]]:
        mine = [(args, verified) for name, args, verified in writes if name == tool]
        matching = [
            (args, verified)
            for args, verified in mine
            if all(_same(args.get(key), value) for key, value in expected.items())
        ]
        reasons, blocking = [], []
        if not matching:
            reasons.append(f"no {tool} with {expected}")
        if len(mine) > 1:
            reasons.append(f"{tool} repeated")
            blocking.append("duplicate write")
        if tool == "send_gift_card" and any(not verified for _, verified in mine):
            reasons.append("gift card sent before verify_customer")
            blocking.append(f"lost rule {GIFT_RULE}")
        return reasons, blocking

    return check


def _same(actual: object, expected: object) -> bool:
    if isinstance(expected, (int, float)):
        try:
            return abs(float(str(actual)) - float(expected)) < 0.01
        except ValueError:
            return False
    return str(actual).strip() == str(expected)


def _call(call_id: str, tool: str, **arguments: object) -> ToolCall:
    return ToolCall(call_id, tool, dict(arguments))


def _task(task_id: str, instruction: str, world: World, expected: tuple[str, ...], checker, steps, family: str) -> Task:
    classes = sorted({n.source_class for s in steps for n in s.needs if n.source_class})
    # Only the tools the task uses: choosing among nine tools is planning, which is not what is measured.
    used = {s.call.name for s in steps if s.call is not None}
    tools = tuple(spec for spec in TOOLS if spec.name in used)
    return Task(
        task_id,
        "reach",
        (UserTurn(instruction),),
        lambda: ShopDesk(_copy(world), expected, checker, tools),
        reference=tuple(steps),
        max_steps_per_turn=2 * len(steps) + 4,
        meta={"family": family, "classes": classes, "steps": len(steps)},
    )


def _shop() -> World:
    """The one shop every task reads; each episode works on its own copy."""
    return World(
        prices={"SKU-4417": "37.40", "SKU-2290": "12.85", "SKU-7302": "64.10"},
        customers={"lena.fischer@example.com": "CUS-318", "omar.haddad@example.com": "CUS-642"},
        orders={"CUS-318": list(ORDER_IDS), "CUS-642": ["ORD-6201"]},
        statuses={"ORD-0077": "on hold", "ORD-5101": "delivered", "ORD-6201": "shipped"},
        stock={"SKU-2290": 14, "SKU-7302": 3},
    )


def _fact_in_a_long_sheet(shop: World) -> Task:
    return _task(
        "reach-price",
        "What is the unit price of SKU-4417? Read its product sheet with get_product, then answer with the price.",
        shop,
        ("37.40",),
        _no_writes,
        (
            ReferenceStep(0, _call("r1", "get_product", sku="SKU-4417")),
            ReferenceStep(
                0, answer="37.40", needs=(Need(NeedKind.VALUE, "37.40", guess="37.00", source_class=STATIC),)
            ),
        ),
        "static_middle",
    )


def _two_sheets_compared(shop: World) -> Task:
    return _task(
        "reach-price-compare",
        "Which is cheaper, SKU-2290 or SKU-7302? 1) Read the product sheet of SKU-2290 with get_product. "
        "2) Read the product sheet of SKU-7302. 3) When you have both prices, answer with the cheaper SKU "
        "and its unit price.",
        shop,
        ("SKU-2290", "12.85"),
        _no_writes,
        (
            ReferenceStep(0, _call("r1", "get_product", sku="SKU-2290")),
            ReferenceStep(0, _call("r2", "get_product", sku="SKU-7302")),
            ReferenceStep(
                0,
                answer="SKU-2290 at 12.85",
                needs=(
                    Need(NeedKind.VALUE, "12.85", guess="12.00", source_class=STATIC),
                    Need(NeedKind.VALUE, "64.10", guess="SKU-7302", source_class=STATIC, shown_as="SKU-2290"),
                ),
            ),
        ),
        "static_middle",
    )


def _gift_card_behind_a_skill_rule(shop: World) -> Task:
    steps = (
        ReferenceStep(0, _call("r1", "read_skill", name="gift cards")),
        ReferenceStep(0, _call("r2", "get_customer", email="lena.fischer@example.com")),
        ReferenceStep(
            0,
            _call("r3", "verify_customer", customer_id="CUS-318"),
            needs=(
                Need(NeedKind.RULE, GIFT_RULE, source_class=SKILL),
                Need(NeedKind.VALUE, "CUS-318", argument="customer_id", guess="CUS-381", source_class=STATIC),
            ),
        ),
        ReferenceStep(0, _call("r4", "send_gift_card", customer_id="CUS-318", amount=25.0)),
        ReferenceStep(
            0,
            answer="GC-01318",
            needs=(
                Need(
                    NeedKind.RECEIPT,
                    "GC-01318",
                    repeat=_call("r4", "send_gift_card", customer_id="CUS-318", amount=25.0),
                    source_class=RECEIPT,
                ),
            ),
        ),
    )
    return _task(
        "reach-gift",
        "Send a 25.00 gift card to the customer with email lena.fischer@example.com. 1) Read the 'gift cards' "
        "skill with read_skill and follow its rules. 2) Find the customer id with get_customer. 3) Send the "
        "gift card. 4) When it is sent, answer with the gift card id (it starts with GC-).",
        shop,
        ("GC-01318",),
        _one_write("send_gift_card", customer_id="CUS-318", amount=25.0),
        steps,
        "skill_rule",
    )


def _orders_over_two_pages(shop: World) -> Task:
    return _task(
        "reach-orders",
        "List every order id of customer CUS-318. 1) Call list_orders with page 1. 2) While the result says "
        "there are more orders, call list_orders with the next page. 3) When no more orders are left, answer "
        "with all the order ids.",
        shop,
        ORDER_IDS,
        _no_writes,
        (
            ReferenceStep(0, _call("r1", "list_orders", customer_id="CUS-318", page=1)),
            ReferenceStep(
                0,
                _call("r2", "list_orders", customer_id="CUS-318", page=2),
                needs=(Need(NeedKind.PAGE, "page 1 of 2", source_class=ERROR_PARTIAL),),
            ),
            # The answer quotes both pages' rows: page 1's are what a mask of old observations takes.
            ReferenceStep(
                0,
                answer=", ".join(ORDER_IDS),
                needs=tuple(Need(NeedKind.VALUE, order_id, source_class=STATIC) for order_id in ORDER_IDS),
            ),
        ),
        "paged",
    )


def _order_named_by_an_error(shop: World) -> Task:
    return _task(
        "reach-order-error",
        "What is the status of order ORD-77? 1) Call get_order with ORD-77. 2) If it returns an error that "
        "suggests another id, call get_order again with that id. 3) When you have the order, answer with "
        "its status.",
        shop,
        ("on hold",),
        _no_writes,
        (
            ReferenceStep(0, _call("r1", "get_order", order_id="ORD-77")),
            ReferenceStep(
                0,
                _call("r2", "get_order", order_id="ORD-0077"),
                needs=(
                    Need(NeedKind.ERROR, "ORD-0077", argument="order_id", guess="ORD-77", source_class=ERROR_PARTIAL),
                ),
            ),
            ReferenceStep(
                0, answer="on hold", needs=(Need(NeedKind.VALUE, "on hold", guess="unknown", source_class=DYNAMIC),)
            ),
        ),
        "error",
    )


def _reservation_with_a_receipt(shop: World) -> Task:
    return _task(
        "reach-reserve",
        "Reserve all units in stock of SKU-7302. 1) Read the stock with get_stock. 2) Read the product sheet "
        "with get_product. 3) Reserve that many units with reserve_stock. 4) When the reservation is made, "
        "answer with the reservation id (it starts with RSV-) and the unit price.",
        shop,
        ("RSV-0102", "64.10"),
        _one_write("reserve_stock", sku="SKU-7302", units=3),
        (
            ReferenceStep(0, _call("r1", "get_stock", sku="SKU-7302")),
            ReferenceStep(0, _call("r2", "get_product", sku="SKU-7302")),
            ReferenceStep(
                0,
                _call("r3", "reserve_stock", sku="SKU-7302", units=3),
                needs=(Need(NeedKind.VALUE, '"units_in_stock": 3', argument="units", guess=1, source_class=DYNAMIC),),
            ),
            ReferenceStep(
                0,
                answer="RSV-0102 at 64.10",
                needs=(
                    Need(
                        NeedKind.RECEIPT,
                        "RSV-0102",
                        repeat=_call("r3", "reserve_stock", sku="SKU-7302", units=3),
                        source_class=RECEIPT,
                    ),
                    Need(NeedKind.VALUE, "64.10", guess="64.00", source_class=STATIC),
                ),
            ),
        ),
        "receipt",
    )


def _tasks() -> tuple[Task, ...]:
    shop = _shop()
    return (
        _fact_in_a_long_sheet(shop),
        _two_sheets_compared(shop),
        _gift_card_behind_a_skill_rule(shop),
        _orders_over_two_pages(shop),
        _order_named_by_an_error(shop),
        _reservation_with_a_receipt(shop),
    )


def _copy(world: World) -> World:
    return World(
        dict(world.prices),
        dict(world.customers),
        {k: list(v) for k, v in world.orders.items()},
        dict(world.statuses),
        dict(world.stock),
    )


class ReachSuite(SuiteSource):
    """Six two-to-four-step shop tasks a 1.5B agent solves with full context (tier-1 fidelity)."""

    type: Literal["reach"] = "reach"
    train_ids: tuple[str, ...] = Field(("reach-price-compare", "reach-orders"), description="Tasks in the train split.")

    def fingerprint(self) -> str:
        # The tasks are code, not config: an edited instruction or reference must not reuse stored runs.
        content = repr([(t.id, t.turns, t.reference) for t in _tasks()])
        return f"{self.model_dump_json()}:{hashlib.sha256(content.encode()).hexdigest()[:16]}"

    def load(self) -> Suite:
        tasks = _tasks()
        train = frozenset(self.train_ids)
        return Suite("reach", tasks, train, frozenset(t.id for t in tasks) - train)
