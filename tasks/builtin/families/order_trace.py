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
from dataclasses import dataclass
from functools import partial

import tasks.builtin.text as text
from optimizer.world.task import CheckResult
from tasks.builtin.checks import Verdict, mentions
from tasks.builtin.env import OpsEnv
from tasks.builtin.plan import ERROR_PARTIAL, STATIC, Draft, Family, Script, Seed, page, receipt, value
from tasks.builtin.text import POSITIONS, Ids
from tasks.builtin.world import ORDERS_PER_PAGE, Customer, Line, Order, Product, World, random_lines, random_product

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


@dataclass(frozen=True)
class _Drawn:
    """What the seed drew for one task: the customer and their orders (dates, ids), the undelivered one and
    its look-alike on page 1, their tracking numbers, and the ids the world will hand out."""

    target_page: int
    position: str
    budget: int
    customer: Customer
    product: Product
    total: int
    target: int  # index of the undelivered order
    distractor: int  # index of the same product bought in another month
    dates: list[str]
    order_ids: list[str]
    tracking: str
    void: str  # the voided label's number, next to the tracking number
    wrong_tracking: str
    ticket: str
    taken: frozenset[str]
    world_seed: str
    injections: tuple[str, ...]

    @property
    def pages(self) -> int:
        return -(-self.total // ORDERS_PER_PAGE)


def _draw(seed: Seed) -> _Drawn:
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
    tracking, void, wrong_tracking = (ids.new("1Z", 16, hexa=True, sep="") for _ in range(3))
    ticket = ids.new("TCK", 6)
    taken = frozenset({*order_ids, tracking, void, wrong_tracking, ticket, customer.customer_id, product.sku})
    return _Drawn(
        target_page,
        position,
        budget,
        customer,
        product,
        total,
        target,
        distractor,
        dates,
        order_ids,
        tracking,
        void,
        wrong_tracking,
        ticket,
        taken,
        seed.world_seed,
        seed.injections,
    )


def _order(d: _Drawn, i: int, wrng: random.Random, world: World) -> Order:
    """The customer's `i`-th order: the undelivered one, its look-alike, or filler with its own lines."""
    wanted = i in (d.target, d.distractor)
    product = d.product
    extra = random_lines(
        wrng,
        world.ids,
        wrng.randint(0, 3) if wanted else wrng.randint(1, 3),
        exclude=frozenset({product.name}),
    )
    lines = [Line(world.ids.new("LN", 6), product.sku, product.name, 1, product.price), *extra] if wanted else extra
    amount = round(sum(ln.total for ln in lines), 2)
    summary = lines[0].name + (f" + {len(lines) - 1} more" if len(lines) > 1 else "")
    order = Order(
        d.order_ids[i],
        d.customer.customer_id,
        d.dates[i],
        "in transit" if i == d.target else "delivered" if wanted else wrng.choice(_STATUSES),
        summary,
        amount,
        lines,
        tracking=d.tracking
        if i == d.target
        else d.wrong_tracking
        if i == d.distractor
        else world.ids.new("1Z", 16, hexa=True, sep=""),
        position=d.position if i == d.target else "middle",
        budget=d.budget if i == d.target else wrng.choice((350, 500, 800)),
    )
    if i == d.target:
        order.void_label = d.void
    return order


def _world(d: _Drawn) -> OpsEnv:
    wrng = random.Random(d.world_seed)
    world = World(d.world_seed, Ids(wrng, d.taken), receipts={"TCK": [d.ticket]})
    world.customers[d.customer.customer_id] = d.customer
    for i, order_id in enumerate(d.order_ids):
        world.orders[order_id] = _order(d, i, wrng, world)
    world.order_index[d.customer.customer_id] = list(d.order_ids)
    if d.injections:
        world.injections["get_order"] = d.injections
    return OpsEnv(world, ("search_orders", "get_order", "create_ticket"), partial(_check, d))


def _check(d: _Drawn, env: OpsEnv, answers: Sequence[str | None]) -> CheckResult:
    v = Verdict(env, answers)
    ord_id, tracking = d.order_ids[d.target], d.tracking
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


def _reference(d: _Drawn) -> Script:
    customer_id, pages, total = d.customer.customer_id, d.pages, d.total
    ord_id, wrong_id, tracking = d.order_ids[d.target], d.order_ids[d.distractor], d.tracking
    script = Script()
    script.call("search_orders", status="partial" if pages > 1 else "ok", customer_id=customer_id)
    for p in range(2, d.target_page + 1):
        shown = f"showing {(p - 2) * ORDERS_PER_PAGE + 1}-{(p - 1) * ORDERS_PER_PAGE} of {total} orders"
        script.call(
            "search_orders",
            page(shown),
            status="partial" if p < pages else "ok",
            customer_id=customer_id,
            page=p,
        )
    source = ERROR_PARTIAL if d.target_page < pages else STATIC
    script.call("get_order", value(ord_id, "order_id", wrong_id, source), order_id=ord_id)
    summary = f"Parcel not delivered; outbound tracking {tracking}"
    created = script.call(
        "create_ticket",
        value(ord_id, "order_id", wrong_id, source),
        value(tracking, "summary", summary.replace(tracking, d.void)),
        order_id=ord_id,
        summary=summary,
    )
    answer = f"Opened ticket {d.ticket} for order {ord_id}; outbound tracking {tracking}."
    script.answer(answer, receipt(d.ticket, created))
    return script


def build(seed: Seed) -> Draft:
    d = _draw(seed)
    year, mon = d.dates[d.target][:7].split("-")
    instruction = (
        f"Customer {d.customer.name} ({d.customer.customer_id}) says the {d.product.name} they ordered in "
        f"{MONTHS[int(mon) - 1]} {year} never arrived. Find that order, open a "
        "delivery-investigation ticket for it "
        "whose summary quotes the tracking number of the outbound parcel, and reply with the new "
        "ticket id and "
        "that tracking number."
    )
    difficulty = ("easy", "medium", "hard")[d.target_page - 1]
    facts = {"position": d.position, "target_page": d.target_page, "orders": d.total}
    return Draft(instruction, _reference(d), partial(_world, d), difficulty, d.budget, facts)


FAMILY = Family("order_trace", "paged order search, tracking number in a long event log", build)
