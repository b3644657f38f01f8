"""catalog_quote: find 2-3 SKUs across paged catalog results, create a quote, email it (4-6 steps).

Each wanted product sits on page 1, 2 or 3 of its search at the head, middle or tail of the page, with
near-identical variants (other size or colour) on page 1 as distractors. The quote receipt gates the
email (no receipt visible: the quote is made again), and the email receipt gates the answer.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import tasks.builtin.text as text
from optimizer.world.task import CheckResult
from tasks.builtin.checks import Verdict, mentions, mentions_money
from tasks.builtin.env import OpsEnv
from tasks.builtin.plan import (
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
from tasks.builtin.text import POSITIONS, Ids, money
from tasks.builtin.world import PRODUCTS_PER_PAGE, Customer, Product, World, product_note, random_product

# variant -> (pages of the wanted products grouped by search (category), first product discontinued)
_VARIANTS = (
    (((1, 1),), False),
    (((1, 2),), True),
    (((1,), (2,)), False),
    (((2, 3),), False),
    (((1, 1, 2),), False),
    (((1, 1),), True),
)


@dataclass(frozen=True)
class _Want:
    product: Product
    decoy: Product
    quantity: int
    page: int
    slot: int  # index in the category's result list
    position: str  # head / middle / tail of its page


# A search of one category: its name, how many products it lists, and the wanted ones in it.
_Search = tuple[str, int, list[_Want]]


@dataclass(frozen=True)
class _Drawn:
    """What the seed drew for one task: the customer, the searches with the wanted products in them, the
    successor of a discontinued product, the quote as it must end up, and the ids the world will hand out."""

    customer_id: str
    name: str
    page_budget: int
    searches: list[_Search]
    wanted: list[_Want]
    discontinued: bool
    successor: Product | None
    final: dict[str, int]  # SKU -> quantity the quote must hold
    quote_total: float
    quote: str
    message: str
    made_up: str
    taken: frozenset[str]
    world_seed: str
    injections: tuple[str, ...]


def _draw_search(rng: random.Random, ids: Ids, category: str, pages: tuple[int, ...], turn: int) -> _Search:
    """One category's search: its size and, for each page in `pages`, a wanted product and its look-alike;
    `turn` picks the first product's position on its page, the next ones follow round-robin."""
    sizes, (low, high) = text.CATEGORIES[category]
    last_page = max(pages)
    # The deepest page visited is the last one: complete (static), so it can carry planted text.
    total = (
        rng.randint(12, 22)
        if last_page == 1
        else rng.randint((last_page - 1) * PRODUCTS_PER_PAGE + 6, last_page * PRODUCTS_PER_PAGE)
    )
    brands = rng.sample(text.BRANDS, len(pages))
    wants, used = [], set()
    for brand, p in zip(brands, pages, strict=True):
        size, other = rng.sample(sizes, 2)
        colour = rng.choice(text.COLOURS)
        first, last = (p - 1) * PRODUCTS_PER_PAGE, min(total, p * PRODUCTS_PER_PAGE) - 1
        position = POSITIONS[turn % 3]
        turn += 1
        slot = {"head": first + 1, "middle": (first + last) // 2, "tail": last - 1}[position]
        while slot in used:
            slot += 1
        used.add(slot)
        product = Product(
            ids.new("SKU"),
            text.product_name(brand, category, size, colour),
            category,
            ids.amount(low, high),
            product_note(rng),
        )
        decoy = Product(
            ids.new("SKU"),
            text.product_name(brand, category, other, colour),
            category,
            ids.amount(low, high),
            product_note(rng),
        )
        wants.append(_Want(product, decoy, rng.randint(1, 12), p, slot, position))
    return category, total, wants


def _draw(seed: Seed) -> _Drawn:
    rng = seed.rng
    groups, discontinued = _VARIANTS[seed.index % len(_VARIANTS)]
    page_budget = rng.choice((900, 1200, 1600, 2000))
    ids = Ids(rng)
    customer_id, name = ids.new("CUS"), text.person(rng)
    categories = rng.sample(sorted(text.CATEGORIES), len(groups))
    searches: list[_Search] = []
    turn = seed.index
    for category, pages in zip(categories, groups, strict=True):
        searches.append(_draw_search(rng, ids, category, pages, turn))
        turn += len(pages)
    wanted = [w for _, _, ws in searches for w in ws]
    # A discontinued product is rejected by create_quote; the error names an unlisted successor.
    successor = None
    if discontinued:
        old = wanted[0].product
        _, (low, high) = text.CATEGORIES[old.category]
        successor = Product(
            ids.new("SKU"),
            old.name.replace(",", " (2024 model),", 1),
            old.category,
            ids.amount(low, high),
            "successor model",
            listed=False,
        )
        wanted[0] = dataclasses.replace(wanted[0], product=dataclasses.replace(old, successor=successor.sku))
        searches[0][2][0] = wanted[0]  # the first wanted product is the first of the first search
    final = {w.product.sku: w.quantity for w in wanted}
    if successor is not None:
        final = {successor.sku if sku == wanted[0].product.sku else sku: q for sku, q in final.items()}
    prices = {w.product.sku: w.product.price for w in wanted} | ({successor.sku: successor.price} if successor else {})
    quote_total = round(sum(prices[sku] * q for sku, q in final.items()), 2)
    ids.reserve(money(quote_total))
    quote, message, made_up = (ids.new(kind, 5, hexa=True) for kind in ("QTE", "MSG", "QTE"))
    taken = frozenset({customer_id, quote, message, made_up, *prices, *(w.decoy.sku for w in wanted)})
    return _Drawn(
        customer_id,
        name,
        page_budget,
        searches,
        wanted,
        discontinued,
        successor,
        final,
        quote_total,
        quote,
        message,
        made_up,
        taken,
        seed.world_seed,
        seed.injections,
    )


def _world(d: _Drawn) -> OpsEnv:
    wrng = random.Random(d.world_seed)
    world = World(d.world_seed, Ids(wrng, d.taken), receipts={"QTE": [d.quote], "MSG": [d.message]})
    world.customers[d.customer_id] = Customer(d.customer_id, d.name)
    for category, total, wants in d.searches:
        names = {n for w in wants for n in (w.product.name, w.decoy.name)}
        brands = {w.product.name.split()[0] for w in wants}
        listing: list[Product] = []
        while len(listing) < total - 2 * len(wants):
            product = random_product(wrng, world.ids, category=category, exclude=frozenset(names))
            if product.name.split()[0] not in brands:
                names.add(product.name)
                listing.append(product)
        for i, w in enumerate(wants):  # decoys near the top of page 1, where a guesser looks
            listing.insert(min(len(listing), 1 + 2 * i), w.decoy)
        for w in sorted(wants, key=lambda w: w.slot):
            listing.insert(min(len(listing), w.slot), w.product)
        world.products.extend(listing)
    if d.successor is not None:
        world.products.append(d.successor)
    world.catalog_page_budget = d.page_budget
    if d.injections:
        category, _, wants = d.searches[0]
        world.injections[f"search_catalog:{category}|{max(w.page for w in wants)}"] = d.injections
    return OpsEnv(world, ("search_catalog", "create_quote", "send_email"), partial(_check, d))


def _check(d: _Drawn, env: OpsEnv, answers: Sequence[str | None]) -> CheckResult:
    v = Verdict(env, answers)
    quotes = [w for w in env.writes_of("create_quote") if w.arguments["customer_id"] == d.customer_id]
    if v.require_step(bool(quotes), f"create_quote for {d.customer_id}"):
        got: dict[str, int] = {}
        for item in quotes[0].arguments["lines"]:
            got[item["sku"]] = got.get(item["sku"], 0) + item["quantity"]
        if got != d.final:
            wrong = sorted(set(got.items()) ^ set(d.final.items()))
            v.fail(f"quote lines differ from the request: {wrong}")
        emails = [
            w
            for w in env.writes_of("send_email")
            if w.arguments["customer_id"] == d.customer_id and w.index > quotes[0].index
        ]
        if v.require_step(bool(emails), f"send_email of the quote to {d.customer_id}"):
            mail = f"{emails[0].arguments['subject']}\n{emails[0].arguments['body']}"
            if not mentions(mail, quotes[0].receipt):
                v.fail(f"email does not quote the quote id {quotes[0].receipt}")
            v.answer_mentions(emails[0].receipt, "the email id")
        v.answer_mentions(quotes[0].receipt, "the quote id")
    if v.answer and not mentions_money(v.answer, d.quote_total):
        v.fail(f"final answer does not give the quote total {money(d.quote_total)}")
    return v.result()


def _lines_of(skus: dict[str, int]) -> list[dict[str, object]]:
    return [{"sku": sku, "quantity": q} for sku, q in skus.items()]


def _reference(d: _Drawn) -> Script:
    script = Script()
    sources = {}
    for category, total, wants in d.searches:
        page_count = -(-total // PRODUCTS_PER_PAGE)
        script.call("search_catalog", status="partial" if page_count > 1 else "ok", query=category)
        for p in range(2, max(w.page for w in wants) + 1):
            shown = f"showing {(p - 2) * PRODUCTS_PER_PAGE + 1}-{(p - 1) * PRODUCTS_PER_PAGE} of {total} products"
            status = "partial" if p < page_count else "ok"
            script.call("search_catalog", page(shown), status=status, query=category, page=p)
        for w in wants:
            sources[w.product.sku] = ERROR_PARTIAL if w.page < page_count else STATIC

    def sku_needs(skus: dict[str, int]) -> list:
        """One VALUE need per wanted SKU in `skus`; the guess swaps it for its look-alike."""
        swap = {w.product.sku: w.decoy.sku for w in d.wanted}
        return [
            value(sku, "lines", _lines_of({swap[s] if s == sku else s: q for s, q in skus.items()}), sources[sku])
            for sku in skus
            if sku in swap
        ]

    requested = {w.product.sku: w.quantity for w in d.wanted}
    if d.successor is None:
        quoted = script.call("create_quote", *sku_needs(d.final), customer_id=d.customer_id, lines=_lines_of(d.final))
        proof = receipt(d.quote, quoted)
    else:
        script.call(
            "create_quote",
            *sku_needs(requested),
            status="error",
            customer_id=d.customer_id,
            lines=_lines_of(requested),
        )
        script.call(
            "create_quote",
            *sku_needs(d.final),
            error("E-SKU-DISCONTINUED"),
            value(d.successor.sku, "lines", _lines_of(requested), ERROR_PARTIAL),
            customer_id=d.customer_id,
            lines=_lines_of(d.final),
        )
        # The quote only exists in reaction to the error: not a RECEIPT's `repeat` (see stock_reserve).
        proof = None
    body = (
        f"Dear {d.name}, as requested here is your quote {d.quote}: total {money(d.quote_total)} including all "
        "items you asked for. It is valid for 30 days."
    )
    emailed = script.call(
        "send_email",
        proof or value(d.quote, "body", body.replace(d.quote, d.made_up), RECEIPT),
        customer_id=d.customer_id,
        subject="Your price quote",
        body=body,
    )
    script.answer(
        f"Quote {d.quote} created, total {money(d.quote_total)}; emailed to the customer ({d.message}).",
        receipt(d.message, emailed),
    )
    return script


def build(seed: Seed) -> Draft:
    d = _draw(seed)
    asked = ", ".join(f"{w.quantity} x {w.product.name}" for w in d.wanted)
    instruction = (
        f"Customer {d.name} ({d.customer_id}) asks for a price quote for: {asked}. Look the products up in the "
        "catalog, create the quote (if the system rejects a product, do what it says), email the quote id "
        "and total to the customer, and reply with the quote id, the total and the email's message id."
    )
    deepest = max(w.page for w in d.wanted)
    difficulty = ("easy", "medium", "hard")[min(2, deepest - 1 + d.discontinued)]
    facts = {
        "positions": [w.position for w in d.wanted],
        "pages": [w.page for w in d.wanted],
        "discontinued": d.discontinued,
    }
    largest = max(
        catalog_page_tokens(d.page_budget, min(PRODUCTS_PER_PAGE, total - p * PRODUCTS_PER_PAGE))
        for _, total, wants in d.searches
        for p in range(max(w.page for w in wants))
    )
    return Draft(instruction, _reference(d), partial(_world, d), difficulty, largest, facts)


FAMILY = Family("catalog_quote", "SKUs from paged catalog results, quote receipt reused by the email", build)
