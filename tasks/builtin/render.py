"""Tool outputs of the operations world, rendered from its entities at the size a family planned.

Long outputs are filled to a token budget with realistic filler, and the load-bearing lines are placed
at the head, middle or tail; every render draws from a per-entity seed, so an episode's outputs do not
depend on the order of calls. Receipts put the resource id and status on their first line, errors the
error line; both are returned as `must_keep`.
"""

from __future__ import annotations

import datetime
import itertools
import random
from collections.abc import Iterator, Mapping, Sequence

import tasks.builtin.text as text
from optimizer.world.tool import ToolOutput
from tasks.builtin.text import TODAY, WAREHOUSES, money
from tasks.builtin.world import (
    ORDERS_PER_PAGE,
    PRODUCTS_PER_PAGE,
    Article,
    Line,
    Order,
    Rule,
    Skill,
    StatementEntry,
    Ticket,
    World,
)


def time_of_day(rng: random.Random) -> str:
    return f"{rng.randint(6, 21):02d}:{rng.randint(0, 59):02d}"


_EVENTS = (
    "{wh} picked and packed, {n} parcel(s), {w} kg",
    "sorting centre {hub}: parcel scanned on arrival",
    "sorting centre {hub}: parcel scanned on departure",
    "in transit between hubs, linehaul {hub}",
    "customs data transmitted for {hub}",
    "delivery attempt planned for the next business day",
    "address validated against the postal register",
    "parcel weight re-measured at {hub}: {w} kg",
    "route optimisation: stop moved to evening window",
    "carrier system note: scan gap under investigation",
    "parcel held at {hub} pending capacity",
    "driver shift change, parcel reassigned",
)
_HUBS = (
    "Venlo",
    "Kassel",
    "Lyon Saint-Exupery",
    "Poznan",
    "Zaragoza",
    "Bologna",
    "Linz",
    "Ghent",
    "Brno",
    "Malmo",
)


def render_order(world: World, order: Order) -> str:
    rng = world.rng("order", order.order_id)
    customer = world.customers.get(order.customer_id)
    head = [
        f"order {order.order_id}  placed {order.placed}  status: {order.status}",
        f"customer: {order.customer_id} ({customer.name if customer else 'guest'})",
        f"payment: card ending {rng.randint(1000, 9999)}, captured {money(order.total)}",
        f"ship to: {rng.randint(1, 180)} {rng.choice(_HUBS)} Street, {rng.choice(text.REGIONS)}",
    ]
    keyed = [ln for ln in order.lines if ln.line_id in order.key_lines]
    spread = [ln for ln in order.lines if ln.line_id not in order.key_lines]

    def row(ln: Line) -> str:
        return (
            f"{ln.line_id} | {ln.sku} | {ln.name} | qty {ln.quantity} | unit {money(ln.unit_price)} | "
            f"line {money(ln.total)} | {ln.status}"
        )

    item_rows = (
        text.place([row(ln) for ln in spread], [row(ln) for ln in keyed], order.position)
        if keyed
        else [row(ln) for ln in spread]
    )
    wh = rng.choice(sorted(WAREHOUSES))

    def event() -> str:
        template = rng.choice(_EVENTS)
        body = template.format(wh=wh, hub=rng.choice(_HUBS), n=rng.randint(1, 3), w=round(rng.uniform(0.4, 9), 1))
        return f"{TS}  {body}"

    fixed = "\n".join([*head, *item_rows])
    budget = max(60, order.budget - text.count_tokens(fixed) - 30)
    events = text.fill(event, budget)
    keys: list[str] = []
    if order.tracking:
        # Early in the log the tracking number is the carrier handover; later it is a relabelling.
        keys.append(
            f"{TS}  carrier handover: tracking {order.tracking} (outbound parcel)"
            if order.position == "head"
            else f"{TS}  parcel relabelled at {rng.choice(_HUBS)}: outbound tracking is now "
            f"{order.tracking} (outbound parcel; earlier labels are void)"
        )
    if order.void_label:
        events.insert(
            len(events) // 3 if order.position == "tail" else (3 * len(events)) // 4,
            f"{TS}  label voided: tracking {order.void_label} (cancelled label, never shipped)",
        )
    event_rows = text.place(events, keys, order.position) if keys else events
    stamps = timeline(rng, datetime.date.fromisoformat(order.placed), len(event_rows))
    event_rows = [r.replace(TS, ts, 1) for r, ts in zip(event_rows, stamps, strict=True)]
    keys = [r for r in event_rows if order.tracking and order.tracking in r]
    lines = [
        *head,
        f"--- line items ({len(order.lines)}) ---",
        *item_rows,
        f"--- shipment events ({len(event_rows)}) ---",
        *event_rows,
    ]
    return text.clamp_tokens(lines, order.budget, keep=[*head, *keys, *item_rows])


TS = "0000-00-00 00:00"  # stands in for a timestamp while filling to a budget: same token shape


def timeline(rng: random.Random, start: datetime.date, n: int, end: str = TODAY) -> list[str]:
    """`n` increasing timestamps from `start` to the day before `end` (minute resolution)."""
    first = datetime.datetime.combine(start, datetime.time(8, 0))
    span = max(60 * n, int((datetime.datetime.fromisoformat(end) - first).total_seconds() // 60) - 24 * 60)
    minutes = sorted(rng.randrange(span) for _ in range(n))
    return [(first + datetime.timedelta(minutes=m)).strftime("%Y-%m-%d %H:%M") for m in minutes]


def render_order_page(world: World, customer_id: str, page: int) -> tuple[str, bool, tuple[str, ...]]:
    ids = world.order_index.get(customer_id, [])
    total = len(ids)
    pages = max(1, -(-total // ORDERS_PER_PAGE))
    start = (page - 1) * ORDERS_PER_PAGE
    shown = ids[start : start + ORDERS_PER_PAGE]
    if not shown:
        return f"orders of {customer_id}: page {page} is empty ({total} orders, {pages} page(s)).", False, ()
    warning = f"showing {start + 1}-{start + len(shown)} of {total} orders"
    more = page < pages
    if more:
        warning += f" (page {page} of {pages}; more results on page {page + 1})"
    rows = [
        f"{o.order_id} | {o.placed} | {o.summary} | {money(o.total)} | {o.status}"
        for o in (world.orders[i] for i in shown)
    ]
    header = [f"orders of {customer_id}, newest first", "order | placed | items | total | status"]
    body = [*header, *rows, warning] if page % 2 else [warning, *header, *rows]
    return "\n".join(body), more, (warning,) if more else ()


_RATIONALE = (
    "This keeps the audit trail complete for the quarterly review.",
    "Exceptions need written sign-off from the team lead.",
    "The rule applies to every channel: email, chat and phone follow-ups.",
    "Past incidents showed that skipping this step causes repeat contacts.",
    "The finance team reconciles these records weekly.",
    "When in doubt, ask in the team channel before acting.",
)


_GUIDANCE = (
    "This section collects the clauses that apply before anything is changed in the customer's account. Most "
    "mistakes we see in audits come from acting on the first plausible record instead of the "
    "right one, so take "
    "the time to read the records in full.",
    "The clauses below were reviewed by the operations leads in the last policy cycle. Where a "
    "clause names a "
    "tool, use that tool rather than a workaround in another system; the audit trail only covers the tools.",
    "Customers notice inconsistency more than slowness. A correct answer after a careful check is "
    "better than a "
    "quick answer that has to be corrected later, and corrections create a second contact for the same case.",
    "Edge cases are listed because they happened. If your case looks like one of them but differs "
    "in a detail, "
    "follow the general clauses and mention the difference in the internal note.",
    "Records are reconciled by the finance and quality teams every week. They rely on ids being "
    "copied exactly "
    "as the systems print them; an id with a typo cannot be matched and the case is reopened.",
    "Several clauses exist because of regulatory requirements in one or more regions. They apply "
    "everywhere so "
    "that agents do not have to know which region introduced them.",
    "When two clauses seem to conflict, the more specific clause wins over the general one. If "
    "you still cannot "
    "tell, stop and ask in the team channel; do not guess.",
    "Tone matters: write as you would to a neighbour, plainly and politely. Avoid internal "
    "jargon, queue names "
    "and system codes in anything the customer reads, except the ids the procedure tells you to quote.",
    "The quality team samples cases every week and scores them against these clauses. Scores are shared with "
    "the team, never with customers, and are used to improve this procedure rather than to blame anyone.",
    "Training material and examples for this procedure are in the team wiki. The wiki explains; this file "
    "decides. If the two disagree, this file is right and the wiki gets fixed.",
    "Systems can be slow during peak hours. A slow tool is not a failed tool: wait for the result before you "
    "try again, because trying again can change the customer's account twice.",
    "Internal notes are visible to every agent who opens the case later. Write them so that a colleague can "
    "continue the case without asking you anything.",
)


_EXAMPLES = (
    "Worked example: {name} asked about a {product} paid partly with a voucher. The voucher part "
    "was reissued "
    "as a new voucher code and only the card part went back to the card.",
    "Worked example: {name} wrote in {language}. The reply went out in {language}, with every id "
    "copied exactly "
    "as the systems printed it.",
    "Worked example: {name}'s order with the {product} was paid by invoice. The case went to finance for a "
    "credit note; nothing was changed in the order itself.",
    "Worked example: {name} reported the {product} missing from a bundle. Only the missing component was "
    "handled; the rest of the bundle stayed as it was.",
    "Worked example: {name} asked how another customer's {product} order was handled. We explained that we "
    "cannot share other customers' data and answered the question about their own order.",
    "Worked example: a system timed out while handling {name}'s case. The agent waited, then read "
    "the account "
    "again before doing anything, and found that nothing had changed yet.",
    "Worked example: {name} bought a {product} from a marketplace seller. The seller handles such "
    "cases; we sent "
    "the seller's contact page and closed our part of the conversation politely.",
    "Worked example: {name} wrote that a neighbour might have taken the {product}. The internal "
    "note recorded "
    "only what the carrier's scans show, without speculation.",
    "Worked example: {name}'s {product} was a pre-order that had not shipped yet. It was "
    "cancelled through the "
    "order system; no money had been captured.",
    "Worked example: {name} asked for a copy of this procedure after a long conversation about a {product}. "
    "They received the public summary, not this file.",
)
_LANGUAGES = ("German", "French", "Spanish", "Italian", "Dutch", "Polish", "Swedish", "Portuguese")


def _prose(rng: random.Random) -> Iterator[str]:
    """Guidance paragraphs without repeats, then worked examples that are unique by construction."""
    yield from rng.sample(_GUIDANCE, len(_GUIDANCE))
    while True:
        category = rng.choice(sorted(text.CATEGORIES))
        sizes, _ = text.CATEGORIES[category]
        product = text.product_name(rng.choice(text.BRANDS), category, rng.choice(sizes), rng.choice(text.COLOURS))
        yield rng.choice(_EXAMPLES).format(name=text.person(rng), product=product, language=rng.choice(_LANGUAGES))


def render_skill(world: World, path: str, skill: Skill) -> str:
    rng = world.rng("skill", path)
    sections = (
        "Scope",
        "Before you act",
        "Eligibility",
        "Procedure",
        "Communication",
        "Records",
        "Edge cases",
    )
    per_section = max(1, -(-len(skill.rules) // len(sections)))
    head = [
        "---",
        f"name: {skill.name}",
        f"version: {skill.version}",
        "owner: customer-operations",
        "---",
        f"# {skill.title}",
        "",
        "Read the whole procedure before acting. Every clause is binding; cite a clause by its id.",
    ]
    clauses = []
    for i, rule in enumerate(skill.rules):
        extra = f" {rng.choice(_RATIONALE)}" if not rule.key and rng.random() < 0.35 else ""
        clauses.append(f"{skill.rule_id(i)}: {rule.text}{extra}")
    groups = [clauses[i : i + per_section] for i in range(0, len(clauses), per_section)]
    fixed = text.count_tokens("\n".join([*head, *clauses])) + 12 * len(groups) + 20
    prose = _prose(rng)
    paragraphs = text.fill(lambda: next(prose), skill.budget - fixed) if skill.budget - fixed > 40 else []
    lines = list(head)
    for n, group in enumerate(groups):
        lines += ["", f"## {n + 1}. {sections[n % len(sections)]}", ""]
        # Guidance prose opens each section, so a clause at the tail of the list is at the tail of the file.
        intro = paragraphs[n :: len(groups)]
        if intro:
            lines += ["\n\n".join(intro), ""]
        lines += group
    lines += ["", f"End of {skill.name} procedure, version {skill.version}."]
    keys = [c for c, rule in zip(clauses, skill.rules, strict=True) if rule.key]
    return text.clamp_tokens(lines, skill.budget, keep=[*head, *keys, lines[-1]])


def skill_rules(
    rng: random.Random, filler: Sequence[str], budget: int, keys: Mapping[str, tuple[str, str]]
) -> list[Rule]:
    """Distinct filler clauses (about one per 70 tokens of `budget`) plus each key clause (key -> (text,
    position)) at the head, middle or tail of the list. Ids are positions, so the plan knows them."""
    pool = rng.sample(list(filler), min(len(filler), max(10, budget // 70)))
    rules = [Rule(clause) for clause in pool]
    # Insert from the tail backwards so earlier insertions do not shift the later positions.
    ordered = sorted(keys.items(), key=lambda kv: ("head", "middle", "tail").index(kv[1][1]), reverse=True)
    for key, (clause, position) in ordered:
        index = {
            "head": rng.randint(1, 3),
            "middle": len(rules) // 2 + rng.randint(-2, 2),
            "tail": len(rules) - rng.randint(0, 2),
        }[position]
        rules.insert(max(0, min(len(rules), index)), Rule(clause, key))
    return rules


def render_catalog_page(world: World, query: str, page: int) -> tuple[str, bool, tuple[str, ...]]:
    words = [w for w in query.lower().replace(",", " ").split() if len(w) > 1]
    hits = [
        p for p in world.products if p.listed and words and all(w in f"{p.name} {p.category}".lower() for w in words)
    ]
    if not hits:
        return f"catalog search {query!r}: no products match. Try fewer or more general words.", False, ()
    total = len(hits)
    pages = -(-total // PRODUCTS_PER_PAGE)
    start = (page - 1) * PRODUCTS_PER_PAGE
    shown = hits[start : start + PRODUCTS_PER_PAGE]
    if not shown:
        return (
            f"catalog search {query!r}: page {page} is empty ({total} products, {pages} page(s)).",
            False,
            (),
        )
    warning = f"showing {start + 1}-{start + len(shown)} of {total} products"
    more = page < pages
    if more:
        warning += f" (page {page} of {pages}; more results on page {page + 1})"
    per_row = catalog_row_tokens(world.catalog_page_budget, len(shown))
    rows = []
    for p in shown:
        row = f"{p.sku} | {p.name} | {money(p.price)} | {p.note}"
        rng = world.rng("product", p.sku)
        details = [rng.choice(_ORIGINS), *rng.sample(_PRODUCT_DETAILS, len(_PRODUCT_DETAILS))]
        for detail in details:
            longer = f"{row}; {detail}"
            if text.count_tokens(longer) + 1 > per_row:
                break
            row = longer
        rows.append(row)
    body = [f"catalog search {query!r}", "sku | product | unit price | notes", *rows, warning]
    return "\n".join(body), more, (warning,) if more else ()


_PRODUCT_DETAILS = (
    "spare parts stocked for 7 years", "ships in recyclable packaging", "CE and UKCA marked",
    "user manual in 12 languages", "accessories sold separately", "fits standard EU sockets",
    "tested to 10,000 cycles", "colour may vary slightly by batch", "not suitable for commercial use",
    "frequently bought with the matching accessory set", "assembly takes about 15 minutes",
    "returns accepted within the regional window", "supplier lead time 3 weeks", "energy label A",
    "care: wipe clean with a damp cloth", "rated 4.6 by 1,200 buyers", "gift wrapping available",
    "packaging 100% cardboard", "fits the matching wall bracket", "product safety sheet on request",
    "size chart on the product page", "certified by an independent test lab", "ships flat-packed",
    "free returns for members",
)  # fmt: skip
_ORIGINS = ("made in Portugal", "made in Poland", "made in Czechia", "made in Italy", "made in Vietnam")


def catalog_row_tokens(page_budget: int, rows: int) -> int:
    """Tokens per catalog row so that a page of `rows` products comes close to `page_budget`."""
    return max(44, min(110, (page_budget - 70) // max(1, rows)))


def catalog_page_tokens(page_budget: int, rows: int) -> int:
    """The planned size of a catalog page: what a family reports as its largest output."""
    return 70 + rows * catalog_row_tokens(page_budget, rows)


_KB_PARAS = (
    "This article is maintained by the customer operations policy team. Changes are announced in the weekly "
    "operations digest and take effect on the date shown at the top.",
    "Agents should quote the policy code in replies so that customers and the audit team can "
    "trace the answer to "
    "a specific version of the policy.",
    "Return windows start on the day the parcel is delivered, as recorded by the carrier, not on the order date.",
    "Items must be returned with all accessories. Missing accessories are charged at the spare-part price.",
    "Hygiene products can only be returned sealed. Opened hygiene products are excluded from every return window.",
    "Restocking fees are deducted from the refund. They are never charged separately.",
    "Customers returning through a partner drop-off point receive their refund after the partner scans the parcel.",
    "Seasonal extensions (for example the holiday extension) apply only to orders placed inside "
    "the extension "
    "period and are listed in a separate article.",
    "When the regional table and the category notes disagree, the regional table wins.",
    "Business customers follow their framework contract, which may override this article.",
    "For questions this article does not answer, consult the team lead before replying to the customer.",
    "The return label is free in every region listed below, except where the table states otherwise.",
)


def render_article(world: World, article: Article) -> str:
    rng = world.rng("article", article.article_id)
    head = [
        f"{article.article_id}: {article.title}",
        f"status: {article.status}   updated: {article.updated}   owner: policy-team",
    ]
    if article.status == "superseded":
        head.append("This version is kept for reference only; a newer article replaces it.")
    head.append("")
    cats = [c for c in sorted(text.CATEGORIES) if c != article.category]

    def block() -> str:
        if rng.random() < 0.55:
            return rng.choice(_KB_PARAS)
        rows = []
        for _ in range(rng.randint(3, 6)):
            # Filler suffixes are never region codes, so filler can never repeat a key policy code.
            code = f"RP-{rng.randint(1000, 9999)}-{rng.choice(('EU', 'NX', 'ST', 'RG'))}"
            rows.append(
                f"| {rng.choice(cats)} | {rng.choice(text.REGIONS)} | "
                f"{rng.choice((14, 21, 30, 45, 60, 90))} days | "
                f"{rng.choice((0, 5, 8, 10, 12, 15))}% | {code} |"
            )
        return "\n".join(["| category | region | window | restocking fee | policy code |", *rows])

    budget = max(80, article.budget - text.count_tokens("\n".join([*head, *article.key_rows])) - 20)
    blocks = text.fill(block, budget)
    key_block = "\n".join(["| category | region | window | restocking fee | policy code |", *article.key_rows])
    body = text.place(blocks, key_block, article.position) if article.key_rows else blocks
    lines = [*head, *"\n\n".join(body).split("\n")]
    return text.clamp_tokens(lines, article.budget, keep=[*head, *article.key_rows])


def render_kb_search(world: World, query: str) -> str:
    words = {w for w in query.lower().replace(",", " ").split() if len(w) > 2}
    scored = []
    for rank, article in enumerate(world.articles):
        title = f"{article.title} {article.topic}".lower().replace(",", " ").replace(":", " ").split()
        overlap = sum(1 for w in words if any(t.startswith(w) for t in title))
        if overlap:
            scored.append((-overlap, rank, article))
    scored.sort(key=lambda item: item[:2])
    if not scored:
        return f"knowledge base search {query!r}: no articles match."
    rows = [
        f"{a.article_id} | {a.title} | {a.status} | updated {a.updated}\n    {a.snippet}" for _, _, a in scored[:25]
    ]
    return "\n".join([f"knowledge base search {query!r}: {len(scored)} article(s)", *rows])


_STATEMENT_KINDS = (
    "card charge",
    "card charge",
    "card charge",
    "shipping fee",
    "refund",
    "store credit used",
)
_STATEMENT_PREFIX = {"card charge": "CHG", "shipping fee": "FEE", "refund": "RFN", "store credit used": "SCU"}


def render_statement(world: World, customer_id: str) -> str:
    statement = world.statements[customer_id]
    rng = world.rng("statement", customer_id)
    customer = world.customers.get(customer_id)

    def row(e: StatementEntry) -> str:
        sign = "-" if e.kind in ("refund", "store credit used") else ""
        return f"{{date}} | {e.ref} | {e.order_id} | {e.kind} | {sign}{money(e.amount)}"

    def filler() -> str:
        kind = rng.choice(_STATEMENT_KINDS)
        low, high = (3.5, 14.9) if kind == "shipping fee" else (9.0, 640.0)
        amount = world.ids.fresh(rng, lambda r: money(round(r.uniform(low, high), 2)))
        order = world.ids.fresh(rng, lambda r: f"ORD-{r.randint(10000, 99999)}")
        prefix = _STATEMENT_PREFIX[kind]
        ref = world.ids.fresh(rng, lambda r: f"{prefix}-{r.randint(100000, 999999)}")
        sign = "-" if kind in ("refund", "store credit used") else ""
        return f"{{date}} | {ref} | {order} | {kind} | {sign}{amount}"

    head = [
        f"billing statement for {customer_id} ({customer.name if customer else '?'}), last 12 months",
        "date | reference | order | kind | amount",
    ]
    budget = statement.budget - 60 - 25 * len(statement.keys)
    rows = text.place(text.fill(filler, budget), [row(e) for e in statement.keys], statement.position)
    # Twelve months up to the day before today; one order's consecutive entries share a day.
    day = datetime.date.fromisoformat(TODAY) - datetime.timedelta(days=365)
    step = 364 / max(1, len({r.split(" | ")[2] for r in rows}))
    elapsed = 0.0
    dated = []
    for i, r in enumerate(rows):
        if i == 0 or r.split(" | ")[2] != rows[i - 1].split(" | ")[2]:
            elapsed += step * rng.uniform(0.3, 1.7)
        when = day + datetime.timedelta(days=min(364, int(elapsed)))
        dated.append(r.replace("{date}", when.isoformat()))
    keys = [r for r in dated if any(f" | {e.ref} | " in r for e in statement.keys)]
    lines = [*head, *dated, "end of statement; amounts in EUR; refunds and credits shown negative"]
    return text.clamp_tokens(lines, statement.budget, keep=[*head, *keys])


def render_stock(world: World, sku: str, warehouse: str) -> str:
    on_hand, reserved = world.stock[(sku, warehouse)]
    rng = world.rng("stock", sku, warehouse)
    return "\n".join(
        [
            f"stock {sku} at {warehouse} ({WAREHOUSES.get(warehouse, 'warehouse')})",
            f"on_hand: {on_hand} units",
            f"reserved: {reserved} units",
            f"available: {on_hand - reserved} units",
            f"inbound: {rng.randint(10, 60)} units expected 2024-{rng.choice(('05', '06'))}-{rng.randint(16, 28)}",
            f"bin: {warehouse[3:]}-{rng.choice('ABCDEF')}-{rng.randint(1, 40):02d}-{rng.randint(1, 6)}",
            f"as_of: {TODAY}T{time_of_day(rng)}:{rng.randint(10, 59)}Z (stock changes with every reservation)",
        ]
    )


_THREAD = (
    "Hello, I am still waiting for an answer about this. Could you please check?",
    "I attached the photos you asked for. The box was already open when it arrived.",
    "The tracking page has not changed for a week now.",
    "I was charged but I never received a confirmation email.",
    "Can you tell me what happens next? I need this sorted before the weekend.",
    "My neighbour did not receive anything either, so it was not left next door.",
    "I tried to call but the line was busy. Please reply here.",
    "Thank you for the quick reply earlier. Unfortunately the problem is still there.",
    "I would prefer a refund over a replacement, if possible.",
    "The invoice shows a different address than the one I entered.",
)


def render_ticket(world: World, ticket: Ticket) -> str:
    rng = world.rng("ticket", ticket.ticket_id)
    customer = world.customers.get(ticket.customer_id)
    name = customer.name if customer else "customer"
    head = [
        f"ticket {ticket.ticket_id}  status: {ticket.status}  priority: {ticket.priority}  queue: {ticket.queue}",
        f"customer: {ticket.customer_id} ({name})  assignee: {ticket.assignee}"
        + (f"  escalated to: {ticket.escalated_to}" if ticket.escalated_to else ""),
        f"subject: {ticket.subject}",
        f"closure_code: {ticket.codes[min(ticket.writes, len(ticket.codes) - 1)]} "
        "(valid for the current ticket state only; any write to the ticket issues a new code)",
    ]

    said = itertools.cycle(rng.sample(_THREAD, len(_THREAD)))

    def message() -> str:
        return f"[{TS}] {name}: {next(said)}"

    opening = f"[{TS}] {name}: {ticket.subject}. Order placed about {rng.randint(2, 5)} weeks ago."
    thread = [opening, *text.fill(message, ticket.budget - 120)]
    stamps = timeline(rng, datetime.date(2024, 4, rng.randint(1, 20)), len(thread))
    thread = [m.replace(TS, ts, 1) for m, ts in zip(thread, stamps, strict=True)]
    replies = [f"[{TODAY} {10 + i}:00] you: {body}" for i, body in enumerate(ticket.replies)]
    lines = [*head, f"--- thread ({len(thread) + len(replies)} messages) ---", *thread, *replies]
    return text.clamp_tokens(lines, ticket.budget, keep=[*head, *replies, thread[0]])


def render_ticket_list(world: World, queue: str) -> str:
    tickets = [t for t in world.tickets.values() if t.queue == queue and t.status != "closed"]
    if not tickets:
        return f"queue {queue}: no open tickets."
    rows = [
        f"{t.ticket_id} | {t.priority} | {t.status} | {t.assignee} | {t.customer_id} | {t.subject}" for t in tickets
    ]
    return "\n".join(
        [
            f"queue {queue}: {len(tickets)} open ticket(s)",
            "ticket | prio | status | assignee | customer | subject",
            *rows,
        ]
    )


def receipt(kind_line: str, details: Sequence[str]) -> ToolOutput:
    """A write receipt: the id + status line first (must_keep), then bookkeeping details."""
    return ToolOutput("\n".join([kind_line, *details]), must_keep=(kind_line,))


def failure(line: str, details: Sequence[str] = ()) -> ToolOutput:
    return ToolOutput("\n".join([line, *details]), is_error=True, must_keep=(line,))
