"""store_credit: credit a duplicate charge and tell the customer the balance after the credit (6 steps).

The duplicated card charge sits at the head, middle or tail of a 0.8k-5k token statement, next to the
same order's shipping fee (the distractor amount). The balance is read before and after the credit; the
email and the answer must quote the value read after the write, and the credit and email receipts are
what later steps rely on.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import tasks.builtin.text as text
from optimizer.world.task import CheckResult
from tasks.builtin.checks import Verdict, mentions, mentions_money
from tasks.builtin.env import OpsEnv
from tasks.builtin.plan import DYNAMIC, Draft, Family, Script, Seed, receipt, value
from tasks.builtin.text import POSITIONS, Ids, money
from tasks.builtin.world import Customer, Statement, StatementEntry, World


@dataclass(frozen=True)
class _Drawn:
    """What the seed drew for one task: the customer, the duplicate charge and its look-alike fee, the balance
    before and after the credit, and the ids the world will hand out."""

    customer: Customer
    order_id: str
    charge: float
    fee: float
    before: float
    after: float
    refs: tuple[str, str, str]  # the two charges, then the fee
    credit: str
    message: str
    position: str
    budget: int
    taken: frozenset[str]
    world_seed: str
    injections: tuple[str, ...]


def _draw(seed: Seed) -> _Drawn:
    rng = seed.rng
    position = POSITIONS[(seed.index + 1) % 3]
    budget = rng.choice((800, 1500, 2400, 3300, 4200, 5000))
    ids = Ids(rng)
    customer = Customer(ids.new("CUS"), text.person(rng))
    order_id = ids.new("ORD")
    charge = ids.amount(15.0, 420.0)
    fee = ids.amount(3.5, 12.9)
    while True:
        before = ids.amount(1000.0, 2500.0)
        after = round(before + charge, 2)
        if money(after) not in ids:
            ids.reserve(money(after))
            break
    refs = (ids.new("CHG", 6), ids.new("CHG", 6), ids.new("FEE", 6))
    credit, message = ids.new("CRD", 5, hexa=True), ids.new("MSG", 5, hexa=True)
    taken = frozenset(
        {
            *refs,
            credit,
            message,
            customer.customer_id,
            order_id,
            money(charge),
            money(fee),
            money(before),
            money(after),
        }
    )
    return _Drawn(
        customer,
        order_id,
        charge,
        fee,
        before,
        after,
        refs,
        credit,
        message,
        position,
        budget,
        taken,
        seed.world_seed,
        seed.injections,
    )


def _world(d: _Drawn) -> OpsEnv:
    world = World(
        d.world_seed, Ids(random.Random(d.world_seed), d.taken), receipts={"CRD": [d.credit], "MSG": [d.message]}
    )
    world.customers[d.customer.customer_id] = d.customer
    keys = [
        StatementEntry(d.refs[0], d.order_id, "card charge", d.charge),
        StatementEntry(d.refs[1], d.order_id, "card charge", d.charge),
        StatementEntry(d.refs[2], d.order_id, "shipping fee", d.fee),
    ]
    world.statements[d.customer.customer_id] = Statement(keys, d.position, d.budget)
    world.balances[d.customer.customer_id] = d.before
    if d.injections:
        world.injections["get_statement"] = d.injections
    return OpsEnv(world, ("get_statement", "get_balance", "add_store_credit", "send_email"), partial(_check, d))


def _check(d: _Drawn, env: OpsEnv, answers: Sequence[str | None]) -> CheckResult:
    v = Verdict(env, answers)
    customer_id, charge, after = d.customer.customer_id, d.charge, d.after
    credits = env.writes_of("add_store_credit")
    for w in credits:
        if w.arguments["customer_id"] != customer_id:
            v.fail(f"store credit {w.receipt} posted to {w.arguments['customer_id']}, not {customer_id}")
    mine = [w for w in credits if w.arguments["customer_id"] == customer_id]
    if v.require_step(bool(mine), f"add_store_credit of {money(charge)} for {customer_id}"):
        if abs(mine[0].arguments["amount"] - charge) > 0.005:
            v.fail(f"credited {money(mine[0].arguments['amount'])}; the duplicate charge was {money(charge)}")
        v.answer_mentions(mine[0].receipt, "the credit id")
    emails = [w for w in env.writes_of("send_email") if w.arguments["customer_id"] == customer_id]
    if v.require_step(bool(emails), f"send_email to {customer_id}"):
        email = emails[0]
        if mine and email.index < mine[0].index:
            v.fail("the customer was emailed before the credit was posted")
        body = email.arguments["body"]
        if mine and not mentions(body, mine[0].receipt):
            v.fail(f"email does not quote the credit id {mine[0].receipt}")
        if not mentions_money(body, after):
            stale = " (it quotes the balance read before the credit)" if mentions_money(body, d.before) else ""
            v.fail(f"email does not give the new balance {money(after)}{stale}")
        v.answer_mentions(email.receipt, "the email id")
    if v.answer and not mentions_money(v.answer, after):
        v.fail(f"final answer does not give the new balance {money(after)}")
    return v.result()


def _reference(d: _Drawn) -> Script:
    customer, order_id, charge, after = d.customer, d.order_id, d.charge, d.after
    script = Script()
    script.call("get_statement", customer_id=customer.customer_id)
    script.call("get_balance", customer_id=customer.customer_id)
    credited = script.call(
        "add_store_credit",
        value(money(charge), "amount", d.fee),
        customer_id=customer.customer_id,
        amount=charge,
        reason=f"duplicate card charge on order {order_id}",
    )
    script.call("get_balance", customer_id=customer.customer_id)
    body = (
        f"Dear {customer.name}, we have credited {money(charge)} to your store credit for the "
        "duplicate charge "
        f"on order {order_id} (credit {d.credit}). Your new store-credit balance is {money(after)}."
    )
    emailed = script.call(
        "send_email",
        receipt(d.credit, credited),
        value(money(after), "body", body.replace(money(after), money(d.before)), DYNAMIC),
        customer_id=customer.customer_id,
        subject=f"Store credit for order {order_id}",
        body=body,
    )
    script.answer(
        f"Credited {money(charge)} as {d.credit} for the duplicate charge on {order_id}; new "
        "store-credit balance "
        f"{money(after)}; customer emailed ({d.message}).",
        receipt(d.message, emailed),
    )
    return script


def build(seed: Seed) -> Draft:
    d = _draw(seed)
    instruction = (
        f"Customer {d.customer.name} ({d.customer.customer_id}) was charged twice for order "
        f"{d.order_id}. Find the duplicate "
        "card charge on their billing statement, credit exactly that amount to their store-credit "
        "balance, then "
        "email them the credit id and their new balance. Reply with the credit id, the new "
        "balance and the email's "
        "message id."
    )
    difficulty = "easy" if d.budget <= 1500 else "medium" if d.budget <= 3300 else "hard"
    return Draft(instruction, _reference(d), partial(_world, d), difficulty, d.budget, {"position": d.position})


FAMILY = Family("store_credit", "duplicate charge from a long statement, balance read after the write", build)
