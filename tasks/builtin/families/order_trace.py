"""order_trace: find an order in a paged listing, read its tracking number, open a ticket (4-6 steps).

The wanted order sits on page 1, 2 or 3 of the customer's orders ("showing 1-20 of 47 orders" is the
partial-result warning that gates the next-page call); the same product bought in another month sits on
page 1 as the distractor. The tracking number is at the head, middle or tail of the order's event log,
next to a voided label's number; the ticket receipt is needed for the final answer.
"""

from __future__ import annotations

import datetime
import random
from collections.abc import Sequence

import tasks.builtin.text as text
from optimizer.world.task import CheckResult
from tasks.builtin.checks import Verdict, mentions
from tasks.builtin.env import OpsEnv
from tasks.builtin.plan import ERROR_PARTIAL, STATIC, Draft, Family, Script, Seed, page, receipt, value
from tasks.builtin.text import POSITIONS, Ids
from tasks.builtin.world import ORDERS_PER_PAGE, Customer, Line, Order, World, random_lines, random_product

MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_STATUSES = ("delivered", "delivered", "delivered", "delivered", "returned", "cancelled", "refunded")


def _dates(rng: random.Random, n: int) -> list[str]:
    """`n` order dates, newest first, going back from 10 May 2024 every 4-14 days."""
    day = datetime.date(2024, 5, 10)
    out = []
    for _ in range(n):
        day -= datetime.timedelta(days=rng.randint(4, 14))
        out.append(day.isoformat())
    return out


def build(seed: Seed) -> Draft:
    rng = seed.rng
    target_page = (1, 2, 3, 2)[seed.index % 4]
    position = POSITIONS[seed.index % 3]
    budget = {
        1: rng.choice((1000, 1400, 2500)),
        2: rng.choice((1800, 3200, 4800)),
        3: rng.choice((3500, 6000)),
    }[target_page]
    ids = Ids(rng)
    customer = Customer(ids.new("CUS"), text.person(rng))
    product = random_product(rng, ids)
    if target_page == 1:
        total = rng.randint(12, 38)
        target = rng.randint(4, min(total, ORDERS_PER_PAGE) - 1)
    elif target_page == 2:
        total = rng.randint(26, 58)
        target = rng.randint(ORDERS_PER_PAGE + 1, min(total, 2 * ORDERS_PER_PAGE) - 1)
    else:
        total = rng.randint(46, 68)
        target = rng.randint(2 * ORDERS_PER_PAGE + 1, min(total, 3 * ORDERS_PER_PAGE) - 1)
    dates = _dates(rng, total)
    month = dates[target][:7]
    candidates = [i for i in range(1, min(total, ORDERS_PER_PAGE)) if i != target and dates[i][:7] != month]
    distractor = rng.choice(candidates)
    order_ids = [ids.new("ORD") for _ in range(total)]
    ord_id, wrong_id = order_ids[target], order_ids[distractor]
    tracking, void, wrong_tracking = (ids.new("1Z", 16, hexa=True, sep="") for _ in range(3))
    ticket = ids.new("TCK", 6)
    pages = -(-total // ORDERS_PER_PAGE)
    world_seed = seed.world_seed
    taken = {*order_ids, tracking, void, wrong_tracking, ticket, customer.customer_id, product.sku}

    def make_env() -> OpsEnv:
        wrng = random.Random(world_seed)
        world = World(world_seed, Ids(wrng, taken), receipts={"TCK": [ticket]})
        world.customers[customer.customer_id] = customer
        for i, order_id in enumerate(order_ids):
            wanted = i in (target, distractor)
            extra = random_lines(
                wrng,
                world.ids,
                wrng.randint(0, 3) if wanted else wrng.randint(1, 3),
                exclude=frozenset({product.name}),
            )
            lines = (
                [Line(world.ids.new("LN", 6), product.sku, product.name, 1, product.price), *extra] if wanted else extra
            )
            amount = round(sum(ln.total for ln in lines), 2)
            summary = lines[0].name + (f" + {len(lines) - 1} more" if len(lines) > 1 else "")
            order = Order(
                order_id,
                customer.customer_id,
                dates[i],
                "in transit" if i == target else "delivered" if wanted else wrng.choice(_STATUSES),
                summary,
                amount,
                lines,
                tracking=tracking
                if i == target
                else wrong_tracking
                if i == distractor
                else world.ids.new("1Z", 16, hexa=True, sep=""),
                position=position if i == target else "middle",
                budget=budget if i == target else wrng.choice((350, 500, 800)),
            )
            if i == target:
                order.void_label = void
            world.orders[order_id] = order
        world.order_index[customer.customer_id] = list(order_ids)
        if seed.injections:
            world.injections["get_order"] = seed.injections
        return OpsEnv(world, ("search_orders", "get_order", "create_ticket"), check)

    def check(env: OpsEnv, answers: Sequence[str | None]) -> CheckResult:
        v = Verdict(env, answers)
        opened = env.writes_of("create_ticket")
        for w in opened:
            if w.arguments["order_id"] != ord_id:
                v.fail(f"ticket {w.receipt} opened for order {w.arguments['order_id']}, not the undelivered order")
        mine = [w for w in opened if w.arguments["order_id"] == ord_id]
        if v.require_step(bool(mine), f"create_ticket for the undelivered order {ord_id}"):
            if not mentions(mine[0].arguments["summary"], tracking):
                v.fail(f"ticket summary does not quote the outbound tracking number {tracking}")
            v.answer_mentions(mine[0].receipt, "the new ticket id")
        v.answer_mentions(tracking, "the tracking number")
        return v.result()

    script = Script()
    script.call("search_orders", status="partial" if pages > 1 else "ok", customer_id=customer.customer_id)
    for p in range(2, target_page + 1):
        shown = f"showing {(p - 2) * ORDERS_PER_PAGE + 1}-{(p - 1) * ORDERS_PER_PAGE} of {total} orders"
        script.call(
            "search_orders",
            page(shown),
            status="partial" if p < pages else "ok",
            customer_id=customer.customer_id,
            page=p,
        )
    source = ERROR_PARTIAL if target_page < pages else STATIC
    script.call("get_order", value(ord_id, "order_id", wrong_id, source), order_id=ord_id)
    summary = f"Parcel not delivered; outbound tracking {tracking}"
    created = script.call(
        "create_ticket",
        value(ord_id, "order_id", wrong_id, source),
        value(tracking, "summary", summary.replace(tracking, void)),
        order_id=ord_id,
        summary=summary,
    )
    script.answer(f"Opened ticket {ticket} for order {ord_id}; outbound tracking {tracking}.", receipt(ticket, created))
    year, mon = month.split("-")
    instruction = (
        f"Customer {customer.name} ({customer.customer_id}) says the {product.name} they ordered in "
        f"{MONTHS[int(mon) - 1]} {year} never arrived. Find that order, open a "
        "delivery-investigation ticket for it "
        "whose summary quotes the tracking number of the outbound parcel, and reply with the new "
        "ticket id and "
        "that tracking number."
    )
    difficulty = ("easy", "medium", "hard")[target_page - 1]
    facts = {"position": position, "target_page": target_page, "orders": total}
    return Draft(instruction, script, make_env, difficulty, budget, facts)


FAMILY = Family("order_trace", "paged order search, tracking number in a long event log", build)
