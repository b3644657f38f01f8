"""catalog_quote: find 2-3 SKUs across paged catalog results, create a quote, email it (4-6 steps).

Each wanted product sits on page 1, 2 or 3 of its search at the head, middle or tail of the page, with
near-identical variants (other size or colour) on page 1 as distractors. The quote receipt gates the
email (no receipt visible: the quote is made again), and the email receipt gates the answer.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from optimizer.world.task import CheckResult
from tasks.builtin import text
from tasks.builtin.checks import Verdict, mentions, mentions_money
from tasks.builtin.plan import ERROR_PARTIAL, STATIC, Draft, Family, Script, Seed, page, receipt, value
from tasks.builtin.text import POSITIONS, Ids, money
from tasks.builtin.world import (
    PRODUCTS_PER_PAGE,
    Customer,
    OpsEnv,
    Product,
    World,
    catalog_page_tokens,
    product_note,
    random_product,
)

# variant -> pages of the wanted products, grouped by search (category)
_VARIANTS = (((1, 1),), ((1, 2),), ((1,), (2,)), ((2, 3),), ((1, 1, 2),))


@dataclass(frozen=True)
class _Want:
    product: Product
    decoy: Product
    quantity: int
    page: int
    slot: int  # index in the category's result list
    position: str  # head / middle / tail of its page


def build(seed: Seed) -> Draft:
    rng = seed.rng
    groups = _VARIANTS[seed.index % len(_VARIANTS)]
    page_budget = rng.choice((900, 1200, 1600, 2000))
    ids = Ids(rng)
    customer_id, name = ids.new("CUS"), text.person(rng)
    categories = rng.sample(sorted(text.CATEGORIES), len(groups))
    searches: list[tuple[str, int, list[_Want]]] = []
    turn = seed.index
    for category, pages in zip(categories, groups, strict=True):
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
        searches.append((category, total, wants))
    wanted = [w for _, _, ws in searches for w in ws]
    quote_total = round(sum(w.product.price * w.quantity for w in wanted), 2)
    ids.reserve(money(quote_total))
    quote, message = ids.new("QTE", 5, hexa=True), ids.new("MSG", 5, hexa=True)
    taken = {customer_id, quote, message, *(w.product.sku for w in wanted), *(w.decoy.sku for w in wanted)}
    world_seed = seed.world_seed

    def make_env() -> OpsEnv:
        wrng = random.Random(world_seed)
        world = World(world_seed, Ids(wrng, taken), receipts={"QTE": [quote], "MSG": [message]})
        world.customers[customer_id] = Customer(customer_id, name)
        for category, total, wants in searches:
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
        world.catalog_page_budget = page_budget
        if seed.injections:
            category, _, wants = searches[0]
            world.injections[f"search_catalog:{category}|{max(w.page for w in wants)}"] = seed.injections
        return OpsEnv(world, ("search_catalog", "create_quote", "send_email"), check)

    def check(env: OpsEnv, answers: list[str | None]) -> CheckResult:
        v = Verdict(env, answers)
        quotes = [w for w in env.writes_of("create_quote") if w.arguments["customer_id"] == customer_id]
        if v.require_step(bool(quotes), f"create_quote for {customer_id}"):
            got: dict[str, int] = {}
            for item in quotes[0].arguments["lines"]:
                got[item["sku"]] = got.get(item["sku"], 0) + item["quantity"]
            expected = {w.product.sku: w.quantity for w in wanted}
            if got != expected:
                wrong = sorted(set(got.items()) ^ set(expected.items()))
                v.fail(f"quote lines differ from the request: {wrong}")
            emails = [
                w
                for w in env.writes_of("send_email")
                if w.arguments["customer_id"] == customer_id and w.index > quotes[0].index
            ]
            if v.require_step(bool(emails), f"send_email of the quote to {customer_id}"):
                mail = f"{emails[0].arguments['subject']}\n{emails[0].arguments['body']}"
                if not mentions(mail, quotes[0].receipt):
                    v.fail(f"email does not quote the quote id {quotes[0].receipt}")
                v.answer_mentions(emails[0].receipt, "the email id")
            v.answer_mentions(quotes[0].receipt, "the quote id")
        if v.answer and not mentions_money(v.answer, quote_total):
            v.fail(f"final answer does not give the quote total {money(quote_total)}")
        return v.result()

    script = Script()
    sku_needs = []
    lines = [{"sku": w.product.sku, "quantity": w.quantity} for w in wanted]
    for category, total, wants in searches:
        pages = -(-total // PRODUCTS_PER_PAGE)
        script.call("search_catalog", status="partial" if pages > 1 else "ok", query=category)
        for p in range(2, max(w.page for w in wants) + 1):
            shown = (
                f"showing {(p - 2) * PRODUCTS_PER_PAGE + 1}-{(p - 1) * PRODUCTS_PER_PAGE} of {total} products"
            )
            script.call(
                "search_catalog", page(shown), status="partial" if p < pages else "ok", query=category, page=p
            )
        for w in wants:
            guess = [
                dict(item, sku=w.decoy.sku) if item["sku"] == w.product.sku else dict(item) for item in lines
            ]
            sku_needs.append(
                value(w.product.sku, "lines", guess, ERROR_PARTIAL if w.page < pages else STATIC)
            )
    quoted = script.call("create_quote", *sku_needs, customer_id=customer_id, lines=lines)
    body = (
        f"Dear {name}, as requested here is your quote {quote}: total {money(quote_total)} including all "
        "items you asked for. It is valid for 30 days."
    )
    emailed = script.call(
        "send_email",
        receipt(quote, quoted),
        customer_id=customer_id,
        subject=f"Your quote {quote}",
        body=body,
    )
    script.answer(
        f"Quote {quote} created, total {money(quote_total)}; emailed to the customer ({message}).",
        receipt(message, emailed),
    )
    asked = ", ".join(f"{w.quantity} x {w.product.name}" for w in wanted)
    instruction = (
        f"Customer {name} ({customer_id}) asks for a price quote for: {asked}. Look the products "
        "up in the catalog, "
        "create the quote, email the quote id and total to the customer, and reply with the quote "
        "id, the total "
        "and the email's message id."
    )
    deepest = max(w.page for w in wanted)
    difficulty = ("easy", "medium", "hard")[deepest - 1]
    facts = {"positions": [w.position for w in wanted], "pages": [w.page for w in wanted]}
    largest = max(
        catalog_page_tokens(page_budget, min(PRODUCTS_PER_PAGE, total - p * PRODUCTS_PER_PAGE))
        for _, total, wants in searches
        for p in range(max(w.page for w in wants))
    )
    return Draft(instruction, script, make_env, difficulty, largest, facts)


FAMILY = Family("catalog_quote", "SKUs from paged catalog results, quote receipt reused by the email", build)
