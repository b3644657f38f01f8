"""The operations world's entities: what a family builds in `make_env` and the renderers read.

A family draws the ids and values its reference needs at load time and builds a `World` from them only
when an episode starts; filler entities (other orders, products, tickets) are drawn then, from the
world's own seed, and never repeat a reserved literal.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import tasks.builtin.text as text
from optimizer.world.tool import ToolCall, ToolOutput
from tasks.builtin.text import Ids, money

ORDERS_PER_PAGE = 20
PRODUCTS_PER_PAGE = 25


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

    def key_clause(self, key: str) -> str:
        """The key clause as the skill file prints it: its id and its whole text."""
        for i, rule in enumerate(self.rules):
            if rule.key == key:
                return f"{self.rule_id(i)}: {rule.text}"
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
