"""stock_reserve: find a SKU, reserve stock, survive an offline warehouse, report what is left (5-7 steps).

The SKU comes from a catalog page (page 1 or 2; near-identical variants of the product are the
distractors). In most variants the home warehouse is offline: the error names the fallback warehouse,
and every step after it reacts to that error. Availability is read again after the reservation; the
answer must quote that post-write value, not the one read before.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import tasks.builtin.text as text
from optimizer.world.task import CheckResult
from tasks.builtin.checks import Verdict, mentions_number
from tasks.builtin.env import OpsEnv
from tasks.builtin.plan import (
    DYNAMIC,
    ERROR_PARTIAL,
    RECEIPT,
    STATIC,
    Draft,
    Family,
    Script,
    Seed,
    error,
    page,
    receipt,
    value,
)
from tasks.builtin.render import catalog_page_tokens
from tasks.builtin.text import POSITIONS, WAREHOUSES, Ids
from tasks.builtin.world import PRODUCTS_PER_PAGE, Outage, Product, World, product_note, random_product

# variant -> (catalog page of the product, where the home warehouse fails: None | get_stock | reserve_stock)
_VARIANTS = ((1, None), (1, "get_stock"), (1, "reserve_stock"), (2, "get_stock"), (2, None), (1, "get_stock"))


@dataclass(frozen=True)
class _Drawn:
    """What the seed drew for one task: the product and its look-alike variants, where it sits in the
    catalog, the home and fallback warehouses and the failure between them, the stock before and after the
    reservation, and the ids the world will hand out."""

    target: Product
    variants: list[Product]
    target_page: int
    position: str
    page_budget: int
    total: int  # products the catalog search lists
    first: int  # index of the first product on the target's page
    slot: int  # index of the target in the listing
    brand: str
    fails_on: str | None
    home: str
    fallback: str
    code: str  # the error the home warehouse answers with
    used: str  # the warehouse the reservation must be made at
    quantity: int
    on_hand: int
    reserved: int
    order_id: str
    reservation: str
    made_up: str
    taken: frozenset[str]
    world_seed: str
    injections: tuple[str, ...]

    @property
    def before(self) -> int:
        return self.on_hand - self.reserved

    @property
    def after(self) -> int:
        return self.before - self.quantity


def _draw(seed: Seed) -> _Drawn:
    rng = seed.rng
    target_page, fails_on = _VARIANTS[seed.index % len(_VARIANTS)]
    position = POSITIONS[(seed.index + 2) % 3]
    page_budget = rng.choice((900, 1300, 1800, 2400))
    ids = Ids(rng)
    category = rng.choice(sorted(text.CATEGORIES))
    sizes, (low, high) = text.CATEGORIES[category]
    brand = rng.choice(text.BRANDS)
    size, other_size = rng.sample(sizes, 2)
    colour, other_colour = rng.sample(text.COLOURS, 2)
    target = Product(
        ids.new("SKU"),
        text.product_name(brand, category, size, colour),
        category,
        ids.amount(low, high),
        product_note(rng),
    )
    variants = [
        Product(
            ids.new("SKU"),
            text.product_name(brand, category, s, c),
            category,
            ids.amount(low, high),
            product_note(rng),
        )
        for s, c in ((other_size, colour), (size, other_colour))
    ]
    # The product's page is the last one, so it is a complete (static) page that can carry planted text.
    total = rng.randint(14, 24) if target_page == 1 else rng.randint(32, 50)
    first, last = (target_page - 1) * PRODUCTS_PER_PAGE, min(total, target_page * PRODUCTS_PER_PAGE) - 1
    slot = {"head": first + 1, "middle": (first + last) // 2, "tail": last - 1}[position]
    home, fallback = rng.sample(sorted(WAREHOUSES), 2)
    quantity = rng.randint(2, 24)
    on_hand = rng.randint(quantity + 60, 400)
    reserved = rng.randint(0, on_hand - quantity - 45)
    order_id = ids.new("ORD")
    reservation, made_up = ids.new("RSV", 5, hexa=True), ids.new("RSV", 5, hexa=True)
    taken = frozenset({target.sku, *(v.sku for v in variants), order_id, reservation, made_up})
    return _Drawn(
        target,
        variants,
        target_page,
        position,
        page_budget,
        total,
        first,
        slot,
        brand,
        fails_on,
        home,
        fallback,
        f"E-{home[3:]}-OFFLINE",
        fallback if fails_on else home,
        quantity,
        on_hand,
        reserved,
        order_id,
        reservation,
        made_up,
        taken,
        seed.world_seed,
        seed.injections,
    )


def _world(d: _Drawn) -> OpsEnv:
    wrng = random.Random(d.world_seed)
    world = World(d.world_seed, Ids(wrng, d.taken), receipts={"RSV": [d.reservation]})
    category = d.target.category
    names = frozenset({d.target.name, *(v.name for v in d.variants)})
    filler: list[Product] = []
    while len(filler) < d.total - 3:
        product = random_product(wrng, world.ids, category=category, exclude=names)
        if not product.name.startswith(d.brand) and product.name not in {p.name for p in filler}:
            filler.append(product)
    # The near-identical variants come first on the product's page, so they look right to a guesser.
    products = [*filler]
    for i, variant in enumerate(d.variants):
        products.insert(min(len(products), d.first + i), variant)
    products.insert(d.slot, d.target)
    world.products = products
    world.catalog_page_budget = d.page_budget
    for product in (d.target, *d.variants):
        for wh in (d.home, d.fallback):
            on, res = (d.on_hand, d.reserved) if product is d.target else (wrng.randint(80, 300), wrng.randint(0, 40))
            world.stock[(product.sku, wh)] = [on, res]
    if d.fails_on:
        world.outages[d.home] = Outage(d.code, d.fallback)
    if d.injections:
        world.injections[f"search_catalog:{category}|{d.target_page}"] = d.injections
    return OpsEnv(world, ("search_catalog", "get_stock", "reserve_stock"), partial(_check, d))


def _check(d: _Drawn, env: OpsEnv, answers: Sequence[str | None]) -> CheckResult:
    v = Verdict(env, answers)
    target, order_id = d.target, d.order_id
    held = env.writes_of("reserve_stock")
    for w in held:
        if w.arguments["sku"] != target.sku or w.arguments["order_id"] != order_id:
            v.fail(
                f"reservation {w.receipt} holds {w.arguments['sku']} for {w.arguments['order_id']}, "
                f"not {target.name} for {order_id}"
            )
    mine = [w for w in held if w.arguments["sku"] == target.sku and w.arguments["order_id"] == order_id]
    if v.require_step(bool(mine), f"reserve_stock of {target.sku} for {order_id}"):
        w = mine[0]
        if w.arguments["quantity"] != d.quantity:
            v.fail(f"reserved {w.arguments['quantity']} units; the order needs {d.quantity}")
        if w.arguments["warehouse"] != d.used:
            v.fail(f"reserved at {w.arguments['warehouse']}, expected {d.used}")
        on, res = env.world.stock[(target.sku, w.arguments["warehouse"])]
        if v.answer:
            v.answer_mentions(w.receipt, "the reservation id")
            v.answer_mentions(w.arguments["warehouse"], "the warehouse")
            if not mentions_number(v.answer, on - res):
                stale = (
                    " (it quotes the value read before the reservation)" if mentions_number(v.answer, d.before) else ""
                )
                v.fail(f"final answer does not give the {on - res} units available after the reservation{stale}")
    return v.result()


def _reference(d: _Drawn) -> Script:
    target, home, used = d.target, d.home, d.used
    script = Script()
    query = target.category
    script.call("search_catalog", status="partial" if d.total > PRODUCTS_PER_PAGE else "ok", query=query)
    if d.target_page == 2:
        shown = f"showing 1-{PRODUCTS_PER_PAGE} of {d.total} products"
        script.call("search_catalog", page(shown), query=query, page=2)
    source = ERROR_PARTIAL if d.total > d.target_page * PRODUCTS_PER_PAGE else STATIC
    sku = value(target.sku, "sku", d.variants[0].sku, source)
    reacting = (error(d.code), value(d.fallback, "warehouse", home, ERROR_PARTIAL)) if d.fails_on else ()
    arguments: dict[str, Any] = {"order_id": d.order_id, "sku": target.sku, "quantity": d.quantity}
    if d.fails_on == "get_stock":
        script.call("get_stock", sku, status="error", sku=target.sku, warehouse=home)
        script.call("get_stock", sku, *reacting, sku=target.sku, warehouse=d.fallback)
    elif d.fails_on == "reserve_stock":
        script.call("reserve_stock", sku, status="error", **arguments, warehouse=home)
    else:
        script.call("get_stock", sku, sku=target.sku, warehouse=home)
    held = script.call("reserve_stock", sku, *reacting, **arguments, warehouse=used)
    script.call("get_stock", sku, *reacting, sku=target.sku, warehouse=used)
    # A reservation that only happens in reaction to the error must not be a RECEIPT's `repeat`: an agent
    # that lost the error and skipped it would make it late through the repeat and hide the skip.
    proof = value(d.reservation, None, d.made_up, RECEIPT) if d.fails_on else receipt(d.reservation, held)
    script.answer(
        f"Reserved {d.quantity} units of {target.sku} ({target.name}) for order {d.order_id}: "
        f"reservation {d.reservation} "
        f"at {used}; available: {d.after} units left there.",
        value(f"available: {d.after} units", None, f"available: {d.before} units", DYNAMIC),
        proof,
    )
    return script


def build(seed: Seed) -> Draft:
    d = _draw(seed)
    instruction = (
        f"Order {d.order_id} needs {d.quantity} units of the {d.target.name}. Find its SKU in the "
        "catalog and reserve the "
        f"units at the customer's home warehouse {d.home}; if that warehouse cannot serve the "
        "reservation, do what "
        "the system tells you. Reply with the reservation id, the warehouse that holds it, and "
        "how many units of "
        "that SKU are still available there after your reservation."
    )
    difficulty = ("easy", "medium", "hard")[(d.target_page - 1) + bool(d.fails_on)]
    facts = {"position": d.position, "target_page": d.target_page, "fails_on": d.fails_on}
    largest = max(
        catalog_page_tokens(d.page_budget, min(PRODUCTS_PER_PAGE, d.total - p * PRODUCTS_PER_PAGE))
        for p in range(d.target_page)
    )
    return Draft(instruction, _reference(d), partial(_world, d), difficulty, largest, facts)


FAMILY = Family("stock_reserve", "catalog SKU, offline warehouse fallback, availability read after the write", build)
