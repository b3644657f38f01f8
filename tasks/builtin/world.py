"""The operations world: entities, how tool outputs are rendered from them, and the environment.

A family builds a `World` in `make_env` from its small, already-seeded plan; long texts (order records,
articles, statements, skills) are rendered on first use from a per-entity seed, so creating a task costs
nothing and an episode's outputs do not depend on the order of calls. Writes change state (stock,
balances, tickets) and return receipts whose first line, the resource id and status, is `must_keep`.
"""

from __future__ import annotations

import datetime
import itertools
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from optimizer.world.task import CheckResult, Environment
from optimizer.world.tool import ToolCall, ToolOutput, ToolSpec
from tasks.builtin import text
from tasks.builtin.text import TODAY, WAREHOUSES, Ids, money
from tasks.builtin.tools import SPECS, validate

ORDERS_PER_PAGE = 20
PRODUCTS_PER_PAGE = 25

# The receipt kinds a write tool issues; ids are drawn in order from `World.receipts[kind]`.
RECEIPT_KIND = {
    "request_approval": "APR",
    "issue_refund": "RFD",
    "send_email": "MSG",
    "reserve_stock": "RSV",
    "add_store_credit": "CRD",
    "create_ticket": "TCK",
    "create_quote": "QTE",
    "escalate_ticket": "ESC",
    "reply_ticket": "MSG",
    "close_ticket": "CLO",
}


# ---------------------------------------------------------------------------------------------- entities


@dataclass
class Customer:
    customer_id: str
    name: str
    region: str = "Germany"


@dataclass
class Product:
    sku: str
    name: str
    category: str
    price: float
    note: str = ""
    listed: bool = True  # unlisted products can be quoted but never show up in a search
    successor: str | None = None  # set on a discontinued product: the SKU to quote instead


@dataclass
class Line:
    line_id: str
    sku: str
    name: str
    quantity: int
    unit_price: float
    status: str = "delivered"

    @property
    def total(self) -> float:
        return round(self.quantity * self.unit_price, 2)


@dataclass
class Order:
    order_id: str
    customer_id: str
    placed: str
    status: str
    summary: str
    total: float
    lines: list[Line] = field(default_factory=list)
    tracking: str | None = None
    void_label: str | None = None  # a cancelled shipping label: a tracking number that is not the parcel's
    # Where the load-bearing lines (the key line items, the tracking event) sit in the record.
    position: str = "middle"
    key_lines: tuple[str, ...] = ()  # line ids placed at `position`; the rest are spread around
    budget: int = 450  # tokens of the rendered record


@dataclass
class Article:
    article_id: str
    title: str
    status: str  # current | superseded
    updated: str
    snippet: str
    key_rows: tuple[str, ...] = ()
    position: str = "middle"
    budget: int = 1500
    topic: str = "returns"
    category: str = ""  # filler tables never mention this category, so the key rows stay the only answer


@dataclass
class StatementEntry:
    ref: str
    order_id: str
    kind: str
    amount: float


@dataclass
class Statement:
    """A billing statement: filler entries up to `budget` tokens, the key entries at `position`."""

    keys: list[StatementEntry]
    position: str = "middle"
    budget: int = 1500


@dataclass
class Ticket:
    ticket_id: str
    queue: str
    priority: str
    subject: str
    customer_id: str
    assignee: str
    codes: list[str]  # closure code per state; rotated by every write to the ticket
    status: str = "open"
    writes: int = 0
    escalated_to: str | None = None
    budget: int = 400  # tokens of the rendered ticket; older messages go first when replies push it over
    replies: list[str] = field(default_factory=list)


@dataclass
class Outage:
    code: str  # the error code, e.g. E-AMS2-OFFLINE
    fallback: str


@dataclass
class Rule:
    """One numbered clause of a skill; `key` marks the load-bearing ones a family places."""

    text: str
    key: str | None = None


@dataclass
class Skill:
    name: str
    title: str
    version: str
    prefix: str  # rule id prefix, e.g. RULE-RF
    rules: list[Rule]  # in file order; ids are assigned by position
    budget: int = 2000  # tokens; trailing filler clauses are dropped to fit, key clauses never

    def rule_id(self, index: int) -> str:
        return f"{self.prefix}-{index + 1:02d}"

    def key_id(self, key: str) -> str:
        for i, rule in enumerate(self.rules):
            if rule.key == key:
                return self.rule_id(i)
        raise KeyError(key)


@dataclass
class WriteRecord:
    """One successful write, in call order."""

    index: int  # position in the call log
    tool: str
    arguments: Mapping[str, Any]
    receipt: str


@dataclass
class CallRecord:
    call: ToolCall
    output: ToolOutput
    turn: int


@dataclass
class World:
    """All entities of one episode. Families fill what their tools read."""

    seed: str
    ids: Ids
    receipts: dict[str, list[str]]  # kind -> the receipt ids the plan assigned, in issue order
    issued: dict[str, int] = field(default_factory=dict)
    customers: dict[str, Customer] = field(default_factory=dict)
    orders: dict[str, Order] = field(default_factory=dict)
    order_index: dict[str, list[str]] = field(default_factory=dict)  # customer -> order ids, newest first
    products: list[Product] = field(default_factory=list)  # catalog in search-rank order
    catalog_page_budget: int = 900  # tokens of one full catalog page; product notes are sized to it
    articles: list[Article] = field(default_factory=list)
    statements: dict[str, Statement] = field(default_factory=dict)
    balances: dict[str, float] = field(default_factory=dict)
    stock: dict[tuple[str, str], list[int]] = field(default_factory=dict)  # (sku, wh) -> [on_hand, reserved]
    outages: dict[str, Outage] = field(default_factory=dict)
    tickets: dict[str, Ticket] = field(default_factory=dict)
    skills: dict[str, Skill] = field(default_factory=dict)  # path -> skill
    docs: dict[str, Callable[[], str]] = field(default_factory=dict)  # path -> renderer
    # Compressor-aimed lines planted after the first line of static outputs. Keyed by tool name (every
    # output of that tool) or by "tool:key" (one output, e.g. "search_catalog:kettle|2").
    injections: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def rng(self, *key: object) -> random.Random:
        return random.Random("|".join([self.seed, *map(str, key)]))

    def next_receipt(self, kind: str) -> str:
        """Next id of a receipt kind: the planned ids first (the reference knows them), then fresh ones."""
        pool = self.receipts.setdefault(kind, [])
        n = self.issued.get(kind, 0)
        self.issued[kind] = n + 1
        return pool[n] if n < len(pool) else self.ids.new(kind, 5, hexa=True)


# --------------------------------------------------------------------------------------------- filler


def random_product(
    rng: random.Random,
    ids: Ids,
    *,
    category: str | None = None,
    exclude: frozenset[str] = frozenset(),
) -> Product:
    """A catalog product with a fresh SKU and a unique price; never one of the `exclude` names."""
    while True:
        cat = category or rng.choice(sorted(text.CATEGORIES))
        sizes, (low, high) = text.CATEGORIES[cat]
        name = text.product_name(rng.choice(text.BRANDS), cat, rng.choice(sizes), rng.choice(text.COLOURS))
        if name not in exclude:
            return Product(ids.new("SKU"), name, cat, ids.amount(low, high), product_note(rng))


def random_lines(rng: random.Random, ids: Ids, n: int, exclude: frozenset[str] = frozenset()) -> list[Line]:
    lines = []
    for _ in range(n):
        product = random_product(rng, ids, exclude=exclude)
        quantity = rng.choice((1, 1, 1, 2, 3))
        unit = product.price
        while quantity > 1:  # a line total must not repeat another amount of the world either
            unit = ids.amount(product.price * 0.9, product.price)
            if money(round(unit * quantity, 2)) not in ids:
                ids.reserve(money(round(unit * quantity, 2)))
                break
        lines.append(Line(ids.new("LN", 6), product.sku, product.name, quantity, unit))
    return lines


# --------------------------------------------------------------------------------------------- rendering


def _time(rng: random.Random) -> str:
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
        body = template.format(
            wh=wh, hub=rng.choice(_HUBS), n=rng.randint(1, 3), w=round(rng.uniform(0.4, 9), 1)
        )
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
SUPPORT_CLAUSES = (
    "Greet the customer by name and keep replies under 150 words.",
    "Tickets in the spam queue are closed without a reply.",
    "Never paste internal tool output into a reply.",
    "If the customer writes in a language you do not speak, tag the ticket for translation.",
    "Do not merge tickets from different customers.",
    "Attach the knowledge-base link when the answer comes from an article.",
    "Tickets about data deletion go to the privacy queue.",
    "Apologise once, not in every paragraph.",
    "Do not reopen tickets the customer closed themselves.",
    "Use plain text; no tables or markdown in replies.",
    "Never give a delivery date the carrier has not confirmed.",
    "If a ticket has no customer message, close it as a duplicate.",
    "Tickets from journalists go to the press office.",
    "Do not promise compensation; offer it only when a procedure allows it.",
    "Signature: first name and 'Customer Care'.",
    "Quote order ids exactly as they appear in the order system.",
    "A customer's phone number is never written in a reply.",
    "Bulk tickets (more than 20 items) go to the business desk.",
    "Internal jokes and nicknames for customers are not allowed in notes.",
    "Escalations to the legal team are done by the team lead, not by agents.",
    "Tickets older than 90 days are archived by the system; do not touch them.",
    "Do not ask for a password or full card number, ever.",
    "Use the customer's time zone when you mention times.",
    "Never forward a ticket to a personal mailbox.",
    "Customers who write in capitals are not shouted back at; answer calmly.",
    "If a customer sends an attachment you cannot open, say so and ask for another format.",
    "Do not change a ticket's priority yourself; the queue lead sets priorities.",
    "Replies go through reply_ticket only, never through a personal email account.",
    "Never confirm or deny whether another person has an account with us.",
    "Use the customer's first name in the greeting unless they signed with a title.",
    "When a customer thanks you, a short acknowledgement is enough.",
    "Do not include links to third-party sites in replies.",
    "Internal team names (tier1, tier2, risk) are not mentioned to customers.",
    "A ticket may hold only one customer's issue; ask customers to open a new ticket for a new issue.",
)
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
        product = text.product_name(
            rng.choice(text.BRANDS), category, rng.choice(sizes), rng.choice(text.COLOURS)
        )
        yield rng.choice(_EXAMPLES).format(
            name=text.person(rng), product=product, language=rng.choice(_LANGUAGES)
        )


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
        p
        for p in world.products
        if p.listed and words and all(w in f"{p.name} {p.category}".lower() for w in words)
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


def catalog_row_tokens(page_budget: int, rows: int) -> int:
    """Tokens per catalog row so that a page of `rows` products comes close to `page_budget`."""
    return max(44, min(110, (page_budget - 70) // max(1, rows)))


def catalog_page_tokens(page_budget: int, rows: int) -> int:
    """The planned size of a catalog page: what a family reports as its largest output."""
    return 70 + rows * catalog_row_tokens(page_budget, rows)


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


def product_note(rng: random.Random) -> str:
    return rng.choice(
        (
            "in stock; ships in 1-2 days",
            "low stock",
            "ships in 5-7 days",
            "new this season",
            "bestseller; ships in 1-2 days",
            "eco line, recycled packaging",
            "2-year warranty",
            "bulk discount from 10 units (applied at checkout)",
            "last units; no restock planned",
            "3-year warranty, spare parts available",
            "replaces an older model; see the product page",
        )
    ) + rng.choice(
        (
            "",
            "",
            "; dishwasher-safe parts",
            "; includes travel pouch",
            "; assembly required",
            "; compatible with previous accessories",
            "; limited colour run",
        )
    )


_KB_PARAS = (
    "This article is maintained by the customer operations policy team. Changes are announced in the weekly "
    "operations digest and take effect on the date shown at the top.",
    "Agents should quote the policy code in replies so that customers and the audit team can "
    "trace the answer to "
    "a specific version of the policy.",
    "Return windows start on the day the parcel is delivered, as recorded by the carrier, not on "
    "the order date.",
    "Items must be returned with all accessories. Missing accessories are charged at the spare-part price.",
    "Hygiene products can only be returned sealed. Opened hygiene products are excluded from "
    "every return window.",
    "Restocking fees are deducted from the refund. They are never charged separately.",
    "Customers returning through a partner drop-off point receive their refund after the partner "
    "scans the parcel.",
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
    key_block = "\n".join(
        ["| category | region | window | restocking fee | policy code |", *article.key_rows]
    )
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
        f"{a.article_id} | {a.title} | {a.status} | updated {a.updated}\n    {a.snippet}"
        for _, _, a in scored[:25]
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
            f"inbound: {rng.randint(10, 60)} units expected "
            f"2024-{rng.choice(('05', '06'))}-{rng.randint(16, 28)}",
            f"bin: {warehouse[3:]}-{rng.choice('ABCDEF')}-{rng.randint(1, 40):02d}-{rng.randint(1, 6)}",
            f"as_of: {TODAY}T{_time(rng)}:{rng.randint(10, 59)}Z (stock changes with every reservation)",
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
        f"ticket {ticket.ticket_id}  status: {ticket.status}  priority: {ticket.priority}  queue: "
        f"{ticket.queue}",
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
        f"{t.ticket_id} | {t.priority} | {t.status} | {t.assignee} | {t.customer_id} | {t.subject}"
        for t in tickets
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


# ---------------------------------------------------------------------------------------------- environment

Checker = Callable[["OpsEnv", Sequence[str | None]], CheckResult]


class OpsEnv(Environment):
    """One episode of the operations world: dispatches calls, logs them and their writes, checks the end."""

    def __init__(self, world: World, tools: Sequence[str], checker: Checker) -> None:
        self.world = world
        self._specs = tuple(SPECS[name] for name in tools)
        self._checker = checker
        self.log: list[CallRecord] = []
        self.writes: list[WriteRecord] = []
        self._cache: dict[str, str] = {}

    def tools(self, turn: int) -> Sequence[ToolSpec]:
        return self._specs

    def call(self, call: ToolCall, turn: int) -> ToolOutput:
        output = self._dispatch(call)
        self.log.append(CallRecord(call, output, turn))
        return output

    def check(self, answers: Sequence[str | None]) -> CheckResult:
        return self._checker(self, answers)

    # -- helpers for checkers

    def writes_of(self, tool: str) -> list[WriteRecord]:
        return [w for w in self.writes if w.tool == tool]

    # -- dispatch

    def _dispatch(self, call: ToolCall) -> ToolOutput:
        spec = next((s for s in self._specs if s.name == call.name), None)
        if spec is None:
            names = ", ".join(s.name for s in self._specs)
            return failure(f"error E-UNKNOWN-TOOL: no tool named {call.name!r}; available: {names}")
        problem = validate(spec, call.arguments)
        if problem:
            return failure(f"error E-BAD-ARGUMENTS: {call.name}: {problem}")
        handler = getattr(self, f"_{call.name}")
        output: ToolOutput = handler(**call.arguments)
        if spec.side_effect and not output.is_error:
            receipt_id = output.must_keep[0].split()[1]
            self.writes.append(WriteRecord(len(self.log), call.name, dict(call.arguments), receipt_id))
        return output

    def _static(self, tool: str, key: str, render: Callable[[], str]) -> str:
        cache_key = f"{tool}:{key}"
        if cache_key not in self._cache:
            content = render()
            planted = self.world.injections.get(f"{tool}:{key}") or self.world.injections.get(tool)
            if planted:
                first, _, rest = content.partition("\n")
                content = "\n".join([first, *planted, rest])
            self._cache[cache_key] = content
        return self._cache[cache_key]

    # -- reads

    def _read_file(self, path: str) -> ToolOutput:
        path = path.lstrip("./")
        if path in self.world.skills:
            return ToolOutput(
                self._static("skill", path, lambda: render_skill(self.world, path, self.world.skills[path]))
            )
        if path in self.world.docs:
            return ToolOutput(self._static("read_file", path, self.world.docs[path]))
        known = sorted([*self.world.skills, *self.world.docs])
        return failure(f"error E-NO-FILE: {path} does not exist", [f"files: {', '.join(known) or 'none'}"])

    def _search_orders(self, customer_id: str, page: int = 1) -> ToolOutput:
        if customer_id not in self.world.order_index:
            return failure(f"error E-NO-CUSTOMER: customer {customer_id} not found")
        content, more, keep = render_order_page(self.world, customer_id, page)
        content = self._static("search_orders", f"{customer_id}|{page}", lambda: content)
        return ToolOutput(content, partial=more, must_keep=keep)

    def _get_order(self, order_id: str) -> ToolOutput:
        order = self.world.orders.get(order_id)
        if order is None:
            return failure(f"error E-NO-ORDER: order {order_id} not found")
        return ToolOutput(self._static("get_order", order_id, lambda: render_order(self.world, order)))

    def _search_catalog(self, query: str, page: int = 1) -> ToolOutput:
        content, more, keep = render_catalog_page(self.world, query, page)
        content = self._static("search_catalog", f"{query}|{page}", lambda: content)
        return ToolOutput(content, partial=more, must_keep=keep)

    def _search_kb(self, query: str) -> ToolOutput:
        return ToolOutput(self._static("search_kb", query, lambda: render_kb_search(self.world, query)))

    def _get_article(self, article_id: str) -> ToolOutput:
        article = next((a for a in self.world.articles if a.article_id == article_id), None)
        if article is None:
            return failure(f"error E-NO-ARTICLE: article {article_id} not found")
        return ToolOutput(
            self._static("get_article", article_id, lambda: render_article(self.world, article))
        )

    def _get_statement(self, customer_id: str) -> ToolOutput:
        if customer_id not in self.world.statements:
            return failure(f"error E-NO-CUSTOMER: customer {customer_id} not found")
        return ToolOutput(
            self._static("get_statement", customer_id, lambda: render_statement(self.world, customer_id))
        )

    def _list_tickets(self, queue: str) -> ToolOutput:
        return ToolOutput(self._static("list_tickets", queue, lambda: render_ticket_list(self.world, queue)))

    def _get_stock(self, sku: str, warehouse: str) -> ToolOutput:
        outage = self.world.outages.get(warehouse)
        if outage is not None:
            return self._offline(warehouse, outage, f"get_stock sku={sku}")
        if (sku, warehouse) not in self.world.stock:
            return failure(f"error E-NO-STOCK-RECORD: no stock record for {sku} at {warehouse}")
        return ToolOutput(render_stock(self.world, sku, warehouse))

    def _offline(self, warehouse: str, outage: Outage, request: str) -> ToolOutput:
        rng = self.world.rng("outage", warehouse)
        return failure(
            f"error {outage.code}: warehouse {warehouse} is offline for maintenance; stock reads "
            "and reservations "
            f"for it are routed to fallback warehouse {outage.fallback}.",
            [
                f"request: {request} warehouse={warehouse}",
                f"incident: INC-{rng.randint(10000, 99999)} opened {TODAY}T06:00Z, expected back "
                f"{TODAY}T22:00Z",
            ],
        )

    def _get_balance(self, customer_id: str) -> ToolOutput:
        if customer_id not in self.world.balances:
            return failure(f"error E-NO-ACCOUNT: no store-credit account for {customer_id}")
        rng = self.world.rng("balance", customer_id, len(self.writes))
        customer = self.world.customers.get(customer_id)
        return ToolOutput(
            "\n".join(
                [
                    f"store-credit account {customer_id} ({customer.name if customer else '?'})",
                    f"balance: {money(self.world.balances[customer_id])}",
                    "status: active   currency: EUR   tier: " + rng.choice(("silver", "gold", "standard")),
                    f"as_of: {TODAY}T{_time(rng)}:{rng.randint(10, 59)}Z (balances change with "
                    "every credit or debit)",
                ]
            )
        )

    def _get_ticket(self, ticket_id: str) -> ToolOutput:
        ticket = self.world.tickets.get(ticket_id)
        if ticket is None:
            return failure(f"error E-NO-TICKET: ticket {ticket_id} not found")
        return ToolOutput(render_ticket(self.world, ticket))

    # -- writes

    def _order_line(self, order_id: str, line_id: str) -> tuple[Order | None, Line | None, ToolOutput | None]:
        order = self.world.orders.get(order_id)
        if order is None:
            return None, None, failure(f"error E-NO-ORDER: order {order_id} not found")
        line = next((ln for ln in order.lines if ln.line_id == line_id), None)
        if line is None:
            return order, None, failure(f"error E-NO-LINE: order {order_id} has no line {line_id}")
        return order, line, None

    def _request_approval(self, order_id: str, line_id: str, amount: float, reason: str) -> ToolOutput:
        _, _, error = self._order_line(order_id, line_id)
        if error:
            return error
        approval = self.world.next_receipt("APR")
        return receipt(
            f"approval {approval} status=approved order={order_id} line={line_id} amount={money(amount)}",
            [
                f"approved_by: supervisor desk ({TODAY})",
                f"reason recorded: {reason[:80]}",
                "valid for one refund of this line up to the approved amount",
            ],
        )

    def _issue_refund(self, order_id: str, line_id: str, amount: float) -> ToolOutput:
        _, line, error = self._order_line(order_id, line_id)
        if error:
            return error
        assert line is not None
        if amount > line.total + 0.005:
            return failure(
                f"error E-REFUND-EXCEEDS-LINE: {money(amount)} is more than line {line_id} "
                f"total {money(line.total)}"
            )
        refund = self.world.next_receipt("RFD")
        return receipt(
            f"refund {refund} status=issued order={order_id} line={line_id} amount={money(amount)}",
            [
                f"posted_at: {TODAY}T10:42:07Z   ledger: payments-eu   settlement: 3-5 business days",
                "note: this refund is recorded; issuing it again creates a second refund",
            ],
        )

    def _send_email(self, customer_id: str, subject: str, body: str) -> ToolOutput:
        if customer_id not in self.world.customers:
            return failure(f"error E-NO-CUSTOMER: customer {customer_id} not found")
        message = self.world.next_receipt("MSG")
        return receipt(
            f"email {message} status=sent to={customer_id}",
            [
                f"subject: {subject[:60]}",
                f"queued_at: {TODAY}T10:45:31Z   channel: smtp-eu   size: {len(body)} chars",
                "note: sending again delivers a second email to the customer",
            ],
        )

    def _reserve_stock(self, order_id: str, sku: str, warehouse: str, quantity: int) -> ToolOutput:
        outage = self.world.outages.get(warehouse)
        if outage is not None:
            return self._offline(warehouse, outage, f"reserve_stock sku={sku} quantity={quantity}")
        record = self.world.stock.get((sku, warehouse))
        if record is None:
            return failure(f"error E-NO-STOCK-RECORD: no stock record for {sku} at {warehouse}")
        if record[0] - record[1] < quantity:
            return failure(
                f"error E-INSUFFICIENT-STOCK: only {record[0] - record[1]} units of {sku} available "
                f"at {warehouse}"
            )
        record[1] += quantity
        reservation = self.world.next_receipt("RSV")
        return receipt(
            f"reservation {reservation} status=held order={order_id} sku={sku} "
            f"warehouse={warehouse} qty={quantity}",
            [
                f"held_until: 2024-05-21T23:59Z   created: {TODAY}T10:43:12Z",
                "note: reserving again holds additional units",
            ],
        )

    def _add_store_credit(self, customer_id: str, amount: float, reason: str) -> ToolOutput:
        if customer_id not in self.world.balances:
            return failure(f"error E-NO-ACCOUNT: no store-credit account for {customer_id}")
        self.world.balances[customer_id] = round(self.world.balances[customer_id] + amount, 2)
        credit = self.world.next_receipt("CRD")
        return receipt(
            f"credit {credit} status=posted customer={customer_id} amount={money(amount)}",
            [
                f"reason recorded: {reason[:80]}",
                f"posted_at: {TODAY}T10:44:02Z   ledger: store-credit-eu",
                "note: posting again credits the amount a second time",
            ],
        )

    def _create_ticket(self, order_id: str, summary: str) -> ToolOutput:
        if order_id not in self.world.orders:
            return failure(f"error E-NO-ORDER: order {order_id} not found")
        ticket = self.world.next_receipt("TCK")
        return receipt(
            f"ticket {ticket} status=open order={order_id} queue=delivery-investigations",
            [
                f"summary recorded: {summary[:90]}",
                f"created: {TODAY}T10:46:40Z   sla: 2 business days",
                "note: creating again opens a second ticket",
            ],
        )

    def _create_quote(self, customer_id: str, lines: list[Mapping[str, Any]]) -> ToolOutput:
        if customer_id not in self.world.customers:
            return failure(f"error E-NO-CUSTOMER: customer {customer_id} not found")
        catalog = {p.sku: p for p in self.world.products}
        total = 0.0
        for item in lines:
            product = catalog.get(item["sku"])
            if product is None:
                return failure(f"error E-NO-SKU: {item['sku']} is not in the catalog")
            if product.successor is not None:
                successor = catalog[product.successor]
                return failure(
                    f"error E-SKU-DISCONTINUED: {product.sku} ({product.name}) is discontinued; quote its "
                    f"successor {successor.sku} ({successor.name}) instead, same quantity. "
                    "No quote was created.",
                    [f"request: create_quote customer={customer_id} lines={len(lines)}"],
                )
            total += product.price * item["quantity"]
        quote = self.world.next_receipt("QTE")
        return receipt(
            f"quote {quote} status=draft customer={customer_id} total={money(round(total, 2))}",
            [
                f"lines: {len(lines)}   valid_until: 2024-06-13   created: {TODAY}T10:47:05Z",
                "note: creating again makes a second quote",
            ],
        )

    def _ticket_write(self, ticket_id: str) -> tuple[Ticket | None, ToolOutput | None]:
        ticket = self.world.tickets.get(ticket_id)
        if ticket is None:
            return None, failure(f"error E-NO-TICKET: ticket {ticket_id} not found")
        if ticket.status == "closed":
            return ticket, failure(f"error E-TICKET-CLOSED: ticket {ticket_id} is closed")
        return ticket, None

    def _escalate_ticket(self, ticket_id: str, team: str) -> ToolOutput:
        ticket, error = self._ticket_write(ticket_id)
        if error:
            return error
        assert ticket is not None
        ticket.escalated_to = team
        ticket.writes += 1
        escalation = self.world.next_receipt("ESC")
        return receipt(
            f"escalation {escalation} status=accepted ticket={ticket_id} team={team}",
            [
                f"created: {TODAY}T10:41:00Z   response target: 4 business hours",
                "note: the ticket stays with you; the team is notified and may add internal notes",
            ],
        )

    def _reply_ticket(self, ticket_id: str, body: str) -> ToolOutput:
        ticket, error = self._ticket_write(ticket_id)
        if error:
            return error
        assert ticket is not None
        ticket.replies.append(body[:200])
        ticket.status = "awaiting-close"
        ticket.writes += 1
        message = self.world.next_receipt("MSG")
        return receipt(
            f"reply {message} status=sent ticket={ticket_id}",
            [
                f"sent: {TODAY}T10:48:19Z   channel: email   template: free text",
                "note: replying again sends the customer a second message; the ticket now awaits closure",
            ],
        )

    def _close_ticket(self, ticket_id: str, closure_code: str) -> ToolOutput:
        ticket, error = self._ticket_write(ticket_id)
        if error:
            return error
        assert ticket is not None
        current = ticket.codes[min(ticket.writes, len(ticket.codes) - 1)]
        if closure_code != current:
            return failure(
                f"error E-CLOSURE-CODE: {closure_code} is not the current closure code of {ticket_id}; "
                "read the ticket again for the current code"
            )
        ticket.status = "closed"
        ticket.writes += 1
        closing = self.world.next_receipt("CLO")
        return receipt(
            f"closure {closing} status=closed ticket={ticket_id}",
            [
                f"closed: {TODAY}T10:50:00Z   by: you   satisfaction survey: scheduled for tomorrow",
                "note: a closed ticket cannot be written to; the customer can reopen it within 14 days",
            ],
        )
