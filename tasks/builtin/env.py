"""The environment of one episode: dispatches calls to the world, logs them and their writes, checks the end.

Tool failures, unknown tools and bad arguments come back as `ToolOutput(is_error=True)` with the error
line in `must_keep`; nothing raises. Writes change state (stock, balances, tickets) and are logged with
the receipt id they returned, which is what the checkers read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from optimizer.world.task import CheckResult, Environment
from optimizer.world.tool import ToolCall, ToolOutput, ToolSpec
from tasks.builtin.render import (
    failure,
    receipt,
    render_article,
    render_catalog_page,
    render_kb_search,
    render_order,
    render_order_page,
    render_skill,
    render_statement,
    render_stock,
    render_ticket,
    render_ticket_list,
    time_of_day,
)
from tasks.builtin.text import TODAY, money
from tasks.builtin.tools import SPECS, validate
from tasks.builtin.world import CallRecord, Line, Order, Outage, Ticket, World, WriteRecord

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
        return ToolOutput(self._static("get_article", article_id, lambda: render_article(self.world, article)))

    def _get_statement(self, customer_id: str) -> ToolOutput:
        if customer_id not in self.world.statements:
            return failure(f"error E-NO-CUSTOMER: customer {customer_id} not found")
        return ToolOutput(self._static("get_statement", customer_id, lambda: render_statement(self.world, customer_id)))

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
                f"incident: INC-{rng.randint(10000, 99999)} opened {TODAY}T06:00Z, expected back {TODAY}T22:00Z",
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
                    f"as_of: {TODAY}T{time_of_day(rng)}:{rng.randint(10, 59)}Z (balances change with "
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
                f"error E-REFUND-EXCEEDS-LINE: {money(amount)} is more than line {line_id} total {money(line.total)}"
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
                f"error E-INSUFFICIENT-STOCK: only {record[0] - record[1]} units of {sku} available at {warehouse}"
            )
        record[1] += quantity
        reservation = self.world.next_receipt("RSV")
        return receipt(
            f"reservation {reservation} status=held order={order_id} sku={sku} warehouse={warehouse} qty={quantity}",
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
