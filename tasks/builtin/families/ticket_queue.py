"""ticket_queue: work 1-3 tickets of a queue by skills/support/SKILL.md (7-15 steps).

The agent's tickets are listed among colleagues' tickets (the distractors). Two clauses of the support
skill gate steps: P1 tickets are escalated to tier2 before any reply, and after replying the ticket is
read again and closed with the closure code that read shows. Every write rotates the closure code, so
the code read before the reply is stale (dynamic state); the reply receipt is what the close and the
final answer rely on.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import tasks.builtin.text as text
from optimizer.world.task import CheckResult
from tasks.builtin.checks import Verdict
from tasks.builtin.env import OpsEnv
from tasks.builtin.plan import DYNAMIC, Draft, Family, Script, Seed, receipt, rule, value
from tasks.builtin.render import skill_rules
from tasks.builtin.text import POSITIONS, Ids
from tasks.builtin.world import Customer, Skill, Ticket, World

# Filler clauses of the support skill: real-sounding, and none of them applies to the task at hand.
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

SKILL_PATH = "skills/support/SKILL.md"
QUEUES = ("billing-eu", "delivery-eu", "returns-eu", "accounts-eu")
SUBJECTS = (
    "Charged twice for one order",
    "Parcel marked delivered but not received",
    "Wrong size sent",
    "Refund not received yet",
    "Cannot log in to my account",
    "Invoice address is wrong",
    "Item arrived damaged",
    "Voucher code rejected at checkout",
    "Change delivery address",
    "Missing item in parcel",
    "Cancel my order please",
    "Warranty question",
    "Discount not applied",
    "Order stuck in processing",
)
REPLY = (
    "Hello {name}, thank you for your patience. We have looked into '{subject}' and resolved it on our side; "
    "you will see the change in your account within two business days. Kind regards, Customer Care"
)
# variant -> priorities of the agent's own tickets, in list order
_VARIANTS = (("P1",), ("P1", "P2"), ("P2", "P3"), ("P2", "P3", "P2"), ("P2",), ("P3", "P1"))


@dataclass(frozen=True)
class _Mine:
    ticket_id: str
    priority: str
    subject: str
    customer: Customer
    codes: tuple[str, ...]
    budget: int


@dataclass(frozen=True)
class _Drawn:
    """What the seed drew for one task: the agent and its queue, its own tickets among colleagues' ones,
    the support skill with its two gating clauses, where each sits, and the ids the world will hand out."""

    me: str
    queue: str
    list_at: str
    escalate_at: str
    reread_at: str
    skill_budget: int
    skill: Skill
    mine: list[_Mine]
    others: list[tuple[str, str]]  # (ticket id, customer id) of colleagues' tickets
    colleagues: list[str]
    replies: list[str]
    escalations: list[str]
    taken: frozenset[str]
    world_seed: str
    injections: tuple[str, ...]


def _skill(rng: random.Random, budget: int, escalate_at: str, reread_at: str) -> Skill:
    """The support procedure: filler clauses around the escalate and the reread clause, each where it was drawn."""
    rules = skill_rules(
        rng,
        SUPPORT_CLAUSES,
        budget,
        {
            "escalate": (
                "A ticket with priority P1 must be escalated with escalate_ticket to team tier2 "
                "before you send "
                "any reply on it.",
                escalate_at,
            ),
            "reread": (
                "After replying, read the ticket again with get_ticket and close it with the "
                "closure_code that "
                "this new read shows; a code read before the reply is void.",
                reread_at,
            ),
        },
    )
    return Skill(
        "support",
        "Support desk procedure",
        f"{rng.randint(1, 4)}.{rng.randint(0, 9)}",
        "RULE-SP",
        rules,
        budget,
    )


def _draw(seed: Seed) -> _Drawn:
    rng = seed.rng
    priorities = _VARIANTS[seed.index % len(_VARIANTS)]
    escalate_at, reread_at = POSITIONS[(seed.index + 2) % 3], POSITIONS[(seed.index + seed.index // 3) % 3]
    list_at = POSITIONS[seed.index % 3]
    skill_budget = rng.choice((1600, 2200, 2800, 3600))
    ids = Ids(rng)
    me = f"AG-{rng.randint(100, 999)}"
    queue = rng.choice(QUEUES)
    skill = _skill(rng, skill_budget, escalate_at, reread_at)
    mine = [
        _Mine(
            ids.new("TCK", 6),
            p,
            rng.choice(SUBJECTS),
            Customer(ids.new("CUS"), text.person(rng)),
            tuple(ids.new("CLS", 4) for _ in range(4)),
            rng.choice((300, 600, 1000, 1400)),
        )
        for p in priorities
    ]
    others = [(ids.new("TCK", 6), ids.new("CUS")) for _ in range(rng.randint(12, 45))]
    colleagues = [f"AG-{rng.randint(100, 999)}" for _ in range(4)]
    replies = [ids.new("MSG", 5, hexa=True) for _ in mine]
    escalations = [ids.new("ESC", 5, hexa=True) for _ in mine]
    taken = frozenset(
        {
            *(m.ticket_id for m in mine),
            *(c for m in mine for c in m.codes),
            *(t for t, _ in others),
            *replies,
            *escalations,
            *(m.customer.customer_id for m in mine),
        }
    )
    return _Drawn(
        me,
        queue,
        list_at,
        escalate_at,
        reread_at,
        skill_budget,
        skill,
        mine,
        others,
        colleagues,
        replies,
        escalations,
        taken,
        seed.world_seed,
        seed.injections,
    )


def _world(d: _Drawn) -> OpsEnv:
    wrng = random.Random(d.world_seed)
    world = World(d.world_seed, Ids(wrng, d.taken), receipts={"MSG": list(d.replies), "ESC": list(d.escalations)})
    listing: list[Ticket] = []
    for ticket_id, customer_id in d.others:
        customer = Customer(customer_id, text.person(wrng))
        world.customers[customer_id] = customer
        listing.append(
            Ticket(
                ticket_id,
                d.queue,
                wrng.choice(("P1", "P2", "P2", "P3", "P3")),
                wrng.choice(SUBJECTS),
                customer_id,
                wrng.choice(d.colleagues) if wrng.random() < 0.8 else "unassigned",
                [world.ids.new("CLS", 4) for _ in range(3)],
                budget=wrng.choice((250, 450)),
            )
        )
    start = {"head": 1, "middle": len(listing) // 2, "tail": len(listing) - 1}[d.list_at]
    for i, m in enumerate(d.mine):
        world.customers[m.customer.customer_id] = m.customer
        listing.insert(
            min(len(listing), start + 2 * i),
            Ticket(
                m.ticket_id,
                d.queue,
                m.priority,
                m.subject,
                m.customer.customer_id,
                f"{d.me} (you)",
                list(m.codes),
                budget=m.budget,
            ),
        )
    world.tickets = {t.ticket_id: t for t in listing}
    world.skills[SKILL_PATH] = d.skill
    if d.injections:
        world.injections["list_tickets"] = d.injections
    tools = ("read_file", "list_tickets", "get_ticket", "escalate_ticket", "reply_ticket", "close_ticket")
    return OpsEnv(world, tools, partial(_check, d))


def _check(d: _Drawn, env: OpsEnv, answers: Sequence[str | None]) -> CheckResult:
    v = Verdict(env, answers)
    escalate_rule, reread_rule = d.skill.key_id("escalate"), d.skill.key_id("reread")
    own = {m.ticket_id for m in d.mine}
    for w in env.writes:
        if w.arguments.get("ticket_id") not in own:
            v.fail(f"{w.tool} on {w.arguments.get('ticket_id')}, which is not one of your tickets")
    for m in d.mine:
        sent = [w for w in env.writes_of("reply_ticket") if w.arguments["ticket_id"] == m.ticket_id]
        if not v.require_step(bool(sent), f"reply_ticket on {m.ticket_id}"):
            continue
        if m.priority == "P1":
            escalated = [
                w
                for w in env.writes_of("escalate_ticket")
                if w.arguments["ticket_id"] == m.ticket_id
                and w.index < sent[0].index
                and "tier2" in w.arguments["team"].lower()
            ]
            if not escalated:
                v.fail(
                    f"{escalate_rule} not followed: P1 ticket {m.ticket_id} was answered without escalation to tier2",
                    blocking=True,
                )
        reread = [
            r
            for r in env.log[sent[0].index + 1 :]
            if r.call.name == "get_ticket" and r.call.arguments.get("ticket_id") == m.ticket_id
        ]
        if not reread:
            v.fail(
                f"{reread_rule} not followed: {m.ticket_id} was not read again after the reply",
                blocking=True,
            )
        v.require_step(env.world.tickets[m.ticket_id].status == "closed", f"close_ticket on {m.ticket_id}")
        v.answer_mentions(sent[0].receipt, f"the reply id of {m.ticket_id}")
    return v.result()


def _reference(d: _Drawn) -> Script:
    script = Script()
    script.call("read_file", path=SKILL_PATH)
    script.call("list_tickets", queue=d.queue)
    answer_needs = []
    summary = []
    for i, m in enumerate(d.mine):
        decoy = d.others[(i * 7 + 3) % len(d.others)][0]
        tid = value(m.ticket_id, "ticket_id", decoy)
        script.call("get_ticket", tid, ticket_id=m.ticket_id)
        writes = 0
        if m.priority == "P1":
            escalate = rule(d.skill.key_clause("escalate"))
            script.call("escalate_ticket", escalate, tid, ticket_id=m.ticket_id, team="tier2")
            writes += 1
        replied = script.call(
            "reply_ticket",
            tid,
            ticket_id=m.ticket_id,
            body=REPLY.format(name=m.customer.name.split()[0], subject=m.subject),
        )
        writes += 1
        script.call("get_ticket", rule(d.skill.key_clause("reread")), tid, ticket_id=m.ticket_id)
        script.call(
            "close_ticket",
            tid,
            value(m.codes[writes], "closure_code", m.codes[0], DYNAMIC),
            receipt(d.replies[i], replied),
            ticket_id=m.ticket_id,
            closure_code=m.codes[writes],
        )
        answer_needs.append(receipt(d.replies[i], replied))
        summary.append(f"{m.ticket_id} (reply {d.replies[i]})")
    script.answer(f"Replied to and closed {', '.join(summary)}.", *answer_needs)
    return script


def build(seed: Seed) -> Draft:
    d = _draw(seed)
    instruction = (
        f"You are support agent {d.me}. Work through your own open tickets in queue {d.queue}: answer "
        "each customer "
        f"and close the ticket, following the support procedure in {SKILL_PATH}. Leave tickets of "
        "other agents "
        "alone. When done, reply with each ticket id and the id of the reply you sent on it."
    )
    difficulty = "hard" if len(d.mine) > 1 else "medium"
    rule_positions = {d.skill.key_id("escalate"): d.escalate_at, d.skill.key_id("reread"): d.reread_at}
    facts = {"position": d.list_at, "rule_positions": rule_positions, "tickets": len(d.mine)}
    largest = max(d.skill_budget, *(m.budget for m in d.mine))
    return Draft(instruction, _reference(d), partial(_world, d), difficulty, largest, facts)


FAMILY = Family("ticket_queue", "skill-gated ticket work with closure codes that change on every write", build)
