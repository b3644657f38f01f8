"""kb_answer: look a return policy up in a long KB article and answer with its policy code (2-4 steps).

The load-bearing row sits at the head, middle or tail of a 1.5k-7.8k token article; a superseded
article with the same title competes in the search results, and neighbouring rows of the same table
carry other codes. The 4-step variant also emails the customer and reports the message id.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import tasks.builtin.text as text
from optimizer.world.task import CheckResult, Need, NeedKind
from tasks.builtin.checks import Verdict, mentions, mentions_number
from tasks.builtin.env import OpsEnv
from tasks.builtin.plan import STATIC, Draft, Family, Script, Seed, receipt, value
from tasks.builtin.text import POSITIONS, Ids
from tasks.builtin.world import Article, Customer, World

REGION_CODES = {
    "Germany": "DE",
    "France": "FR",
    "Spain": "ES",
    "Italy": "IT",
    "Netherlands": "NL",
    "Poland": "PL",
    "Ireland": "IE",
    "Austria": "AT",
    "Belgium": "BE",
    "Sweden": "SE",
}
TITLE = "Return windows and restocking fees by region"
WINDOWS = (30, 45, 60, 100)
_OTHER_TITLES = (
    "Return labels: printing and drop-off points",
    "Warranty claims for small appliances",
    "Refunds to expired cards",
    "Exchanging items for another size",
    "Return windows for gift recipients",
    "Damaged-on-arrival reports: what to ask",
    "Restocking fees for business accounts",
    "Holiday return window extension",
    "Returning items bought in a bundle",
    "Carrier claims for lost parcels",
    "Store credit instead of refunds",
    "Return shipping costs for oversized items",
)

# variant -> (steps, article id given in the instruction, email the customer)
_VARIANTS = ((3, False, False), (2, True, False), (4, False, True))


@dataclass(frozen=True)
class _Drawn:
    """What the seed drew for one task: the variant, the current and the superseded article with their
    table rows, the key row's window, fee and code and the look-alike codes, the customer, and the ids
    the world will hand out."""

    steps: int
    given: bool  # the instruction names the article id
    email: bool  # the customer is emailed the answer
    position: str
    budget: int
    category: str
    region: str
    current: str
    old: str
    key_code: str
    neighbour_code: str
    other_code: str
    old_code: str
    days: int
    fee: int
    other_days: int
    rows: tuple[str, ...]
    old_rows: tuple[str, ...]
    customer: Customer
    filler: list[tuple[str, str]]  # (article id, title) of unrelated articles
    message: str
    taken: frozenset[str]
    world_seed: str
    injections: tuple[str, ...]

    @property
    def tools(self) -> tuple[str, ...]:
        return ("search_kb", "get_article", "send_email") if self.email else ("search_kb", "get_article")


def _draw(seed: Seed) -> _Drawn:
    rng = seed.rng
    steps, given, email = _VARIANTS[seed.index % len(_VARIANTS)]
    position = POSITIONS[(seed.index // len(_VARIANTS) + seed.index) % 3]
    budget = rng.choice((1500, 2600, 3800, 5200, 6600, 7800)) if steps > 2 else rng.choice((4200, 6200, 7800))
    ids = Ids(rng)
    category = rng.choice(sorted(text.CATEGORIES))
    region, neighbour = rng.sample(sorted(REGION_CODES), 2)
    other_category = rng.choice([c for c in sorted(text.CATEGORIES) if c != category])
    current, old = ids.new("KB", 5), ids.new("KB", 5)

    def code(place: str) -> str:
        return f"{ids.new('RP', 4)}-{REGION_CODES[place]}"

    key_code, neighbour_code, other_code, old_code = code(region), code(neighbour), code(region), code(region)
    days, fee = rng.choice(WINDOWS), rng.choice((0, 5, 8, 12))
    other_days = WINDOWS[(WINDOWS.index(days) + 1) % len(WINDOWS)]  # no draw: the task stays as it was
    old_days, old_fee = rng.choice((14, 21)), rng.choice((10, 15))
    rows = (
        f"| {category} | {neighbour} | {rng.choice((14, 21, 30))} days | {rng.choice((5, 10))}% | {neighbour_code} |",
        f"| {category} | {region} | {days} days | {fee}% | {key_code} |",
        f"| {other_category} | {region} | {rng.choice((14, 21))} days | {rng.choice((3, 10))}% | {other_code} |",
    )
    old_rows = (f"| {category} | {region} | {old_days} days | {old_fee}% | {old_code} |",)
    customer = Customer(ids.new("CUS"), text.person(rng), region)
    filler = [(ids.new("KB", 5), title) for title in rng.sample(_OTHER_TITLES, rng.randint(6, 12))]
    message = ids.new("MSG", 5, hexa=True)
    taken = frozenset({key_code, neighbour_code, other_code, old_code, current, old, message, customer.customer_id})
    return _Drawn(
        steps,
        given,
        email,
        position,
        budget,
        category,
        region,
        current,
        old,
        key_code,
        neighbour_code,
        other_code,
        old_code,
        days,
        fee,
        other_days,
        rows,
        old_rows,
        customer,
        filler,
        message,
        taken,
        seed.world_seed,
        seed.injections,
    )


def _articles(d: _Drawn) -> list[Article]:
    """The superseded and the current policy article, then the unrelated ones."""
    return [
        Article(
            d.old,
            f"{TITLE} (2023)",
            "superseded",
            "2023-02-01",
            "Windows per category and region; restocking fees.",
            d.old_rows,
            "middle",
            max(800, d.budget // 3),
            category=d.category,
        ),
        Article(
            d.current,
            f"{TITLE} (2024)",
            "current",
            "2024-04-02",
            "Windows per category and region; restocking fees; policy codes.",
            d.rows,
            d.position,
            d.budget,
            category=d.category,
        ),
        *[
            Article(
                i,
                t,
                "current",
                f"2024-0{1 + n % 4}-1{n % 9}",
                "Procedure and exceptions.",
                (),
                "middle",
                900,
                topic="support",
                category=d.category,
            )
            for n, (i, t) in enumerate(d.filler)
        ],
    ]


def _world(d: _Drawn) -> OpsEnv:
    world = World(d.world_seed, Ids(random.Random(d.world_seed), d.taken), receipts={"MSG": [d.message]})
    world.customers[d.customer.customer_id] = d.customer
    world.articles = _articles(d)
    if d.injections:
        world.injections["get_article"] = d.injections
    return OpsEnv(world, d.tools, partial(_check, d))


def _check(d: _Drawn, env: OpsEnv, answers: Sequence[str | None]) -> CheckResult:
    v = Verdict(env, answers)
    key_code = d.key_code
    if v.answer:
        if not mentions(v.answer, key_code):
            wrong = next((c for c in (d.neighbour_code, d.other_code, d.old_code) if mentions(v.answer, c)), None)
            v.fail(f"final answer does not quote policy {key_code}" + (f" (quotes {wrong})" if wrong else ""))
        if not mentions_number(v.answer, d.days):
            v.fail(f"final answer does not give the {d.days}-day window")
    if d.email:
        sent = env.writes_of("send_email")
        if v.require_step(bool(sent), f"send_email to {d.customer.customer_id}"):
            if not any(mentions(w.arguments["body"], key_code) for w in sent):
                v.fail(f"email to the customer does not quote policy {key_code}")
            v.answer_mentions(sent[0].receipt, "the email id")
    return v.result()


def _reference(d: _Drawn) -> Script:
    days, fee, key_code = d.days, d.fee, d.key_code
    script = Script()
    query = "return window restocking fee"
    if d.given:
        script.call("get_article", article_id=d.current)
    else:
        script.call("search_kb", query=query)
        script.call("get_article", value(d.current, "article_id", d.old), article_id=d.current)
    reply = f"{days} days to return, restocking fee {fee}%, policy code {key_code}."
    # The checker wants the window in the answer, and only the key row says which window applies: "30 days"
    # also stands in other rows, so the need is the key row's cells, and an agent without it guesses a window.
    window = Need(
        NeedKind.VALUE,
        f"| {days} days | {fee}% | {key_code} |",
        guess=f"{d.other_days} days",
        source_class=STATIC,
        shown_as=f"{days} days",
    )
    if d.email:
        body = (
            f"Dear {d.customer.name}, for {d.category} items in {d.region} you have {days} days to return, with a "
            f"{fee}% restocking fee (policy {key_code})."
        )
        sent_call = script.call(
            "send_email",
            value(key_code, "body", body.replace(key_code, d.neighbour_code)),
            customer_id=d.customer.customer_id,
            subject=f"Your return question about a {d.category}",
            body=body,
        )
        script.answer(f"{reply} Email {d.message} sent.", receipt(d.message, sent_call), window)
    else:
        script.answer(reply, value(key_code, None, d.neighbour_code), window)
    return script


def build(seed: Seed) -> Draft:
    d = _draw(seed)
    instruction = (
        f"A customer in {'the ' if d.region == 'Netherlands' else ''}{d.region} asks how many days "
        "they have to return a "
        f"{d.category} and what restocking fee "
        "applies. Find the current policy in the knowledge base"
        + (f" (article {d.current})" if d.given else "")
        + " and answer with the number of days, the fee and the policy code."
        + (
            f" Also email the answer to the customer ({d.customer.customer_id}) and report the email's message id."
            if d.email
            else ""
        )
    )
    difficulty = "easy" if d.steps < 4 and d.budget < 5000 else "medium"
    return Draft(instruction, _reference(d), partial(_world, d), difficulty, d.budget, {"position": d.position})


FAMILY = Family("kb_answer", "return policy from a long KB article", build)
