"""refund: refund one damaged line of a long order by the book in skills/refunds/SKILL.md (5-6 steps).

Two clauses of a 1.2k-3.8k token skill gate steps: lines above an approval limit need `request_approval`
first, and every refund is followed by an email quoting the refund id. The clauses sit at the head,
middle or tail of the file. The damaged line is at the head, middle or tail of an order of up to 6k
tokens, next to a line of the same product type (the distractor); the refund receipt is what the email
and the answer depend on.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import tasks.builtin.text as text
from optimizer.world.task import CheckResult
from tasks.builtin.checks import Verdict, mentions
from tasks.builtin.env import OpsEnv
from tasks.builtin.plan import Draft, Family, Script, Seed, receipt, rule, value
from tasks.builtin.render import skill_rules
from tasks.builtin.text import POSITIONS, Ids, money
from tasks.builtin.world import Customer, Line, Order, Skill, World, random_lines

# Filler clauses of the refund skill: real-sounding, and none of them applies to the task at hand.
REFUND_CLAUSES = (
    "Refunds for gift cards are never issued; offer a replacement card code instead.",
    "Marketplace orders (seller id starting with MKT) are refunded by the seller, not by us.",
    "Orders paid by invoice are refunded by credit note; finance issues those, not the support desk.",
    "Never promise a refund date; quote the settlement window shown on the receipt.",
    "Chargebacks in progress block refunds on the same order; hand those to the disputes team.",
    "For orders older than 24 months, ask the customer for proof of purchase before anything else.",
    "Do not refund shipping on partial returns unless the whole order is returned.",
    "Business accounts with a framework contract follow the contract's refund schedule.",
    "Write to customers in the language of their last message.",
    "Keep internal notes factual; no speculation about carriers or warehouses.",
    "Digital goods (licences, downloads) are handled by the licensing team.",
    "Bundles are refunded per component line, never as a whole bundle.",
    "If a customer threatens legal action, stop and hand the case to the legal inbox.",
    "Pre-orders that have not shipped are cancelled, not refunded.",
    "Do not share other customers' data, even when asked for a comparison.",
    "Loyalty points earned on a refunded line are reversed automatically; do not adjust them by hand.",
    "Use the customer's preferred name from the account when addressing them.",
    "Cash-on-delivery orders are refunded by bank transfer after the customer confirms an IBAN.",
    "Rental items are returned through the rental portal and are out of scope here.",
    "A second refund request for the same line is answered with the first refund's receipt.",
    "Subscription renewals follow the subscription terms; they are never refunded pro rata here.",
    "Price-match claims are not refunds; route them to the pricing team.",
    "For damaged items, photos are helpful but never mandatory.",
    "Items bought with employee discount are refunded at the discounted price.",
    "Never disclose internal approval limits to customers.",
    "Order notes written by the warehouse are internal and are not quoted to customers.",
    "Customers on the fraud watch list are handled by the risk team only.",
    "Vouchers used on an order are reissued, not refunded as money.",
    "Public holidays do not change any deadline in this procedure.",
    "Customers may ask for a copy of this policy; send the public summary, not this file.",
    "Refunds go to the original payment method; never to a different card or account.",
    "Split payments (card plus voucher) are refunded in the same split, card part first.",
    "Orders placed by a deceased customer's account are handled by the bereavement desk.",
    "Items returned without the original packaging are refunded in full when they are undamaged.",
    "Refunds for orders shipped outside the EU follow the export desk's checklist.",
    "Do not issue goodwill refunds; goodwill is given as store credit by the retention team.",
    "If the payment provider is down, wait and retry later; do not switch the payment method.",
    "Currency is always EUR; never convert amounts for the customer.",
    "Orders flagged as test orders are never refunded; report them to the platform team.",
    "A refund never exceeds what was paid for the line, including discounts.",
)

SKILL_PATH = "skills/refunds/SKILL.md"
DOC_PATH = "docs/refunds/notes.md"


@dataclass(frozen=True)
class _Drawn:
    """What the seed drew for one task: the customer and order, the damaged line and its look-alike, the
    refund skill with its two gating clauses, where each sits, and the ids the world will hand out."""

    customer: Customer
    order_id: str
    needs_approval: bool
    approval_at: str
    notify_at: str
    line_at: str
    order_budget: int
    skill_budget: int
    limit: float
    name: str  # the damaged product
    other_name: str
    damaged: Line
    decoy: Line
    skill: Skill
    refund: str
    message: str
    approval: str
    taken: frozenset[str]
    n_lines: int
    world_seed: str
    injections: tuple[str, ...]


def _skill(rng: random.Random, budget: int, limit: float, approval_at: str, notify_at: str) -> Skill:
    """The refund procedure: filler clauses around the approval and the notify clause, each where it was drawn."""
    rules = skill_rules(
        rng,
        REFUND_CLAUSES,
        budget,
        {
            "approval": (
                f"A refund of more than {money(limit)} for one order line needs approval first: call "
                "request_approval for that line and amount, and only then issue_refund. Refunds up to "
                f"{money(limit)} need no approval.",
                approval_at,
            ),
            "notify": (
                "After issue_refund succeeds, email the customer with send_email: the subject "
                "names the order id "
                "and the body quotes the refund id from the refund receipt.",
                notify_at,
            ),
        },
    )
    return Skill(
        "refunds",
        "Refund procedure",
        f"{rng.randint(2, 5)}.{rng.randint(0, 9)}",
        "RULE-RF",
        rules,
        budget,
    )


def _draw(seed: Seed) -> _Drawn:
    rng = seed.rng
    needs_approval = seed.index % 3 != 1
    approval_at, notify_at = POSITIONS[seed.index % 3], POSITIONS[(seed.index + 1 + seed.index // 3) % 3]
    line_at = POSITIONS[(seed.index + 2) % 3]
    order_budget = rng.choice((500, 1200, 2400, 3600, 4800, 6000))
    skill_budget = rng.choice((1200, 1800, 2600, 3800))
    ids = Ids(rng)
    customer = Customer(ids.new("CUS"), text.person(rng))
    order_id = ids.new("ORD")
    limit = float(rng.choice((100, 150, 200, 250)))
    ids.reserve(money(limit))
    category = rng.choice([c for c, (_, (_, high)) in text.CATEGORIES.items() if high > limit + 40])
    sizes, (low, high) = text.CATEGORIES[category]
    amount = ids.amount(limit + 15, high) if needs_approval else ids.amount(max(low, 12.0), limit - 10)
    brand, other_brand = rng.sample(text.BRANDS, 2)
    name = text.product_name(brand, category, rng.choice(sizes), rng.choice(text.COLOURS))
    other_name = text.product_name(other_brand, category, rng.choice(sizes), rng.choice(text.COLOURS))
    other_amount = ids.amount(low, high)
    damaged = Line(ids.new("LN", 6), ids.new("SKU"), name, 1, amount)
    decoy = Line(ids.new("LN", 6), ids.new("SKU"), other_name, 1, other_amount)
    skill = _skill(rng, skill_budget, limit, approval_at, notify_at)
    refund, message, approval = (
        ids.new("RFD", 5, hexa=True),
        ids.new("MSG", 5, hexa=True),
        ids.new("APR", 5, hexa=True),
    )
    taken = frozenset(
        {
            customer.customer_id,
            order_id,
            damaged.line_id,
            decoy.line_id,
            damaged.sku,
            decoy.sku,
            refund,
            message,
            approval,
            money(amount),
            money(other_amount),
            money(limit),
        }
    )
    return _Drawn(
        customer,
        order_id,
        needs_approval,
        approval_at,
        notify_at,
        line_at,
        order_budget,
        skill_budget,
        limit,
        name,
        other_name,
        damaged,
        decoy,
        skill,
        refund,
        message,
        approval,
        taken,
        max(6, order_budget // 110),
        seed.world_seed,
        seed.injections,
    )


def _desk_notes() -> str:
    return (
        "# Refund desk notes\n\nShared notes of the refund desk; not a procedure.\n"
        "- Card refunds settle in 3-5 business days.\n- Bank transfers need the customer's IBAN.\n"
        "- The supervisor desk answers approval requests within minutes during office hours."
    )


def _world(d: _Drawn) -> OpsEnv:
    wrng = random.Random(d.world_seed)
    receipts = {"RFD": [d.refund], "MSG": [d.message], "APR": [d.approval]}
    world = World(d.world_seed, Ids(wrng, d.taken), receipts=receipts)
    world.customers[d.customer.customer_id] = d.customer
    lines = random_lines(wrng, world.ids, d.n_lines, exclude=frozenset({d.name, d.other_name}))
    far = {"head": len(lines) * 3 // 4, "middle": len(lines) - 1, "tail": 1}[d.line_at]
    lines.insert(far, d.decoy)
    world.orders[d.order_id] = Order(
        d.order_id,
        d.customer.customer_id,
        "2024-04-29",
        "delivered",
        d.name,
        round(sum(ln.total for ln in [*lines, d.damaged]), 2),
        [*lines, d.damaged],
        tracking=world.ids.new("1Z", 16, hexa=True, sep=""),
        position=d.line_at,
        key_lines=(d.damaged.line_id,),
        budget=d.order_budget,
    )
    world.skills[SKILL_PATH] = d.skill
    world.docs[DOC_PATH] = _desk_notes
    if d.injections:
        world.injections["get_order"] = d.injections
        world.injections["read_file"] = d.injections
    tools = ("read_file", "get_order", "request_approval", "issue_refund", "send_email")
    return OpsEnv(world, tools, partial(_check, d))


def _check(d: _Drawn, env: OpsEnv, answers: Sequence[str | None]) -> CheckResult:
    v = Verdict(env, answers)
    order_id, damaged, amount = d.order_id, d.damaged, d.damaged.unit_price
    approval_rule, notify_rule = d.skill.key_id("approval"), d.skill.key_id("notify")
    refunds = env.writes_of("issue_refund")
    for w in refunds:
        if (w.arguments["order_id"], w.arguments["line_id"]) != (order_id, damaged.line_id):
            v.fail(
                f"refund {w.receipt} issued for {w.arguments['order_id']}/{w.arguments['line_id']}, "
                f"not the damaged line {damaged.line_id}"
            )
    mine = [w for w in refunds if (w.arguments["order_id"], w.arguments["line_id"]) == (order_id, damaged.line_id)]
    if not v.require_step(bool(mine), f"issue_refund for line {damaged.line_id} of {order_id}"):
        return v.result()
    first = mine[0]
    if abs(first.arguments["amount"] - amount) > 0.005:
        v.fail(f"refunded {money(first.arguments['amount'])}; the damaged line is {money(amount)}")
    if d.needs_approval:
        approved = [
            w
            for w in env.writes_of("request_approval")
            if w.index < first.index
            and (w.arguments["order_id"], w.arguments["line_id"]) == (order_id, damaged.line_id)
            and w.arguments["amount"] >= amount - 0.005
        ]
        if not approved:
            v.fail(
                f"{approval_rule} not followed: refund of {money(amount)} above {money(d.limit)} without a "
                "prior request_approval for that line",
                blocking=True,
            )
    emails = [
        w
        for w in env.writes_of("send_email")
        if w.index > first.index and w.arguments["customer_id"] == d.customer.customer_id
    ]
    if not emails:
        v.fail(f"{notify_rule} not followed: the customer was not emailed after the refund", blocking=True)
    elif not (
        mentions(emails[0].arguments["body"], first.receipt) and mentions(emails[0].arguments["subject"], order_id)
    ):
        v.fail(
            f"{notify_rule} not followed: the email must name {order_id} in the subject and quote refund "
            f"{first.receipt}",
            blocking=True,
        )
    v.answer_mentions(first.receipt, "the refund id")
    return v.result()


def _reference(d: _Drawn) -> Script:
    order_id, damaged, amount = d.order_id, d.damaged, d.damaged.unit_price
    script = Script()
    script.call("read_file", path=SKILL_PATH)
    script.call("get_order", order_id=order_id)
    line_need = value(damaged.line_id, "line_id", d.decoy.line_id)
    amount_need = value(money(amount), "amount", d.decoy.unit_price)
    args: dict[str, Any] = {"order_id": order_id, "line_id": damaged.line_id, "amount": amount}
    if d.needs_approval:
        script.call(
            "request_approval",
            rule(d.skill.key_clause("approval")),
            line_need,
            amount_need,
            **args,
            reason="item arrived damaged",
        )
    refunded = script.call("issue_refund", line_need, amount_need, **args)
    body = (
        f"Dear {d.customer.name}, we have refunded {money(amount)} for the damaged {d.name} from order "
        f"{order_id}. "
        f"Your refund id is {d.refund}; the money reaches your card within 3-5 business days."
    )
    script.call(
        "send_email",
        rule(d.skill.key_clause("notify")),
        receipt(d.refund, refunded),
        customer_id=d.customer.customer_id,
        subject=f"Refund for order {order_id}",
        body=body,
    )
    script.answer(
        f"Refund {d.refund} issued: {money(amount)} for line {damaged.line_id} ({d.name}) of order {order_id}; "
        "the customer has been emailed.",
        receipt(d.refund, refunded),
    )
    return script


def build(seed: Seed) -> Draft:
    d = _draw(seed)
    instruction = (
        f"Customer {d.customer.name} ({d.customer.customer_id}) writes that the {d.name} from order "
        f"{d.order_id} arrived "
        "broken and asks for their money back for that item. Process the refund by the book: our "
        "refund procedure "
        f"is in {SKILL_PATH}. Reply with the refund id."
    )
    difficulty = "hard" if d.needs_approval and d.order_budget >= 2400 else "medium"
    rule_positions = {d.skill.key_id("approval"): d.approval_at, d.skill.key_id("notify"): d.notify_at}
    facts = {"position": d.line_at, "rule_positions": rule_positions, "needs_approval": d.needs_approval}
    largest = max(d.order_budget, d.skill_budget)
    return Draft(instruction, _reference(d), partial(_world, d), difficulty, largest, facts)


FAMILY = Family("refund", "skill-gated refund of one line of a long order", build)
