"""The operations world's tools, registered with their retention metadata.

The class of a result comes from here and from runtime status, never from the text a tool returns:
a KB article that says it is a skill is still `static`. Descriptions are generic on purpose: no id,
rule or value a task needs may appear in them, or a compressed context would show it for free.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from optimizer.world.retention import RetentionClass
from optimizer.world.tool import ToolSpec

SKILLS_DIR = "skills/"


def _object(properties: Mapping[str, Any], required: tuple[str, ...] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(properties if required is None else required),
        "additionalProperties": False,
    }


def _string(description: str) -> dict[str, str]:
    return {"type": "string", "description": description}


def _skill_path(arguments: Mapping[str, Any]) -> RetentionClass | None:
    """A file read under `skills/` is a skill; anything else keeps the registered `static`."""
    path = str(arguments.get("path", "")).lstrip("./")
    return RetentionClass.SKILL if path.startswith(SKILLS_DIR) else None


_PAGE = {"type": "integer", "minimum": 1, "description": "1-based page number; defaults to 1."}

_SPECS = (
    ToolSpec(
        "read_file",
        "Read a text file from the operations workspace. Team procedures live under skills/<name>/SKILL.md, "
        "reference notes under docs/.",
        _object({"path": _string("Workspace-relative path, e.g. skills/<name>/SKILL.md.")}),
        RetentionClass.STATIC,
        classify_call=_skill_path,
    ),
    ToolSpec(
        "search_orders",
        "List a customer's orders, newest first, 20 per page: id, date, items, total, status.",
        _object({"customer_id": _string("Customer id."), "page": _PAGE}, ("customer_id",)),
        RetentionClass.STATIC,
    ),
    ToolSpec(
        "get_order",
        "Full order record: line items with line ids and amounts, payment, and the shipment event log.",
        _object({"order_id": _string("Order id.")}),
        RetentionClass.STATIC,
    ),
    ToolSpec(
        "search_catalog",
        "Search the product catalog by words in the product name; 25 products per page with SKU and price.",
        _object({"query": _string("Words to match, e.g. a product type."), "page": _PAGE}, ("query",)),
        RetentionClass.STATIC,
    ),
    ToolSpec(
        "search_kb",
        "Search the support knowledge base; returns article ids, titles, status and a snippet.",
        _object({"query": _string("Search words.")}),
        RetentionClass.STATIC,
    ),
    ToolSpec(
        "get_article",
        "Read one knowledge-base article in full.",
        _object({"article_id": _string("Article id from search_kb.")}),
        RetentionClass.STATIC,
    ),
    ToolSpec(
        "get_statement",
        "A customer's billing statement for the last 12 months: charges, refunds and credits, one per line.",
        _object({"customer_id": _string("Customer id.")}),
        RetentionClass.STATIC,
    ),
    ToolSpec(
        "list_tickets",
        "List the open tickets of a support queue with priority, status and assignee.",
        _object({"queue": _string("Queue name.")}),
        RetentionClass.STATIC,
    ),
    ToolSpec(
        "get_stock",
        "Current stock of a SKU at a warehouse: on hand, reserved, available. Changes with every reservation.",
        _object({"sku": _string("Product SKU."), "warehouse": _string("Warehouse code, e.g. WH-XXX1.")}),
        RetentionClass.DYNAMIC_STATE,
    ),
    ToolSpec(
        "get_balance",
        "Current store-credit balance of a customer. Changes with every credit or debit.",
        _object({"customer_id": _string("Customer id.")}),
        RetentionClass.DYNAMIC_STATE,
    ),
    ToolSpec(
        "get_ticket",
        "Current state of a support ticket: status, priority, assignee, closure code and the message thread.",
        _object({"ticket_id": _string("Ticket id.")}),
        RetentionClass.DYNAMIC_STATE,
    ),
    ToolSpec(
        "request_approval",
        "Ask a supervisor to approve a refund for one order line. Returns an approval receipt.",
        _object(
            {
                "order_id": _string("Order id."),
                "line_id": _string("Line id from the order record."),
                "amount": {"type": "number", "description": "Refund amount in EUR."},
                "reason": _string("Why the refund is due."),
            }
        ),
        RetentionClass.WRITE_RECEIPT,
        side_effect=True,
    ),
    ToolSpec(
        "issue_refund",
        "Refund one order line to the original payment method. Returns a refund receipt.",
        _object(
            {
                "order_id": _string("Order id."),
                "line_id": _string("Line id from the order record."),
                "amount": {"type": "number", "description": "Refund amount in EUR."},
            }
        ),
        RetentionClass.WRITE_RECEIPT,
        side_effect=True,
    ),
    ToolSpec(
        "send_email",
        "Send an email to a customer. Returns a message receipt.",
        _object({"customer_id": _string("Customer id."), "subject": _string("Subject."), "body": _string("Body.")}),
        RetentionClass.WRITE_RECEIPT,
        side_effect=True,
    ),
    ToolSpec(
        "reserve_stock",
        "Reserve units of a SKU at a warehouse for an order. Returns a reservation receipt.",
        _object(
            {
                "order_id": _string("Order id."),
                "sku": _string("Product SKU."),
                "warehouse": _string("Warehouse code."),
                "quantity": {"type": "integer", "minimum": 1, "description": "Units to reserve."},
            }
        ),
        RetentionClass.WRITE_RECEIPT,
        side_effect=True,
    ),
    ToolSpec(
        "add_store_credit",
        "Credit an amount to a customer's store-credit balance. Returns a credit receipt.",
        _object(
            {
                "customer_id": _string("Customer id."),
                "amount": {"type": "number", "description": "Amount in EUR."},
                "reason": _string("Why the credit is given."),
            }
        ),
        RetentionClass.WRITE_RECEIPT,
        side_effect=True,
    ),
    ToolSpec(
        "create_ticket",
        "Open a support ticket about an order. Returns the new ticket's receipt.",
        _object({"order_id": _string("Order id."), "summary": _string("One-line summary.")}),
        RetentionClass.WRITE_RECEIPT,
        side_effect=True,
    ),
    ToolSpec(
        "create_quote",
        "Create a price quote for a customer from catalog SKUs. Prices come from the catalog.",
        _object(
            {
                "customer_id": _string("Customer id."),
                "lines": {
                    "type": "array",
                    "minItems": 1,
                    "items": _object({"sku": _string("SKU."), "quantity": {"type": "integer", "minimum": 1}}),
                },
            }
        ),
        RetentionClass.WRITE_RECEIPT,
        side_effect=True,
    ),
    ToolSpec(
        "escalate_ticket",
        "Escalate a ticket to another support team. Returns an escalation receipt.",
        _object({"ticket_id": _string("Ticket id."), "team": _string("Team to escalate to.")}),
        RetentionClass.WRITE_RECEIPT,
        side_effect=True,
    ),
    ToolSpec(
        "reply_ticket",
        "Post a reply to the customer on a ticket. Returns a message receipt.",
        _object({"ticket_id": _string("Ticket id."), "body": _string("Reply text.")}),
        RetentionClass.WRITE_RECEIPT,
        side_effect=True,
    ),
    ToolSpec(
        "close_ticket",
        "Close a ticket. Needs the ticket's current closure code.",
        _object({"ticket_id": _string("Ticket id."), "closure_code": _string("Closure code from get_ticket.")}),
        RetentionClass.WRITE_RECEIPT,
        side_effect=True,
    ),
)

SPECS: dict[str, ToolSpec] = {spec.name: spec for spec in _SPECS}


def validate(spec: ToolSpec, arguments: Mapping[str, Any]) -> str | None:
    """The first schema violation in `arguments`, or None. Covers the subset of JSON schema used above."""
    return _check(spec.parameters, arguments, "arguments")


def _check(schema: Mapping[str, Any], value: Any, where: str) -> str | None:
    kind = schema.get("type")
    if kind == "object":
        if not isinstance(value, Mapping):
            return f"{where} must be an object"
        properties = schema.get("properties", {})
        for name in schema.get("required", ()):
            if name not in value:
                return f"{where} is missing required field {name!r}"
        for name, item in value.items():
            if name not in properties:
                return f"{where} has unknown field {name!r}"
            problem = _check(properties[name], item, f"{name}")
            if problem:
                return problem
        return None
    if kind == "array":
        if not isinstance(value, list):
            return f"{where} must be an array"
        if len(value) < schema.get("minItems", 0):
            return f"{where} must have at least {schema['minItems']} item(s)"
        for i, item in enumerate(value):
            problem = _check(schema.get("items", {}), item, f"{where}[{i}]")
            if problem:
                return problem
        return None
    if kind == "string" and not isinstance(value, str):
        return f"{where} must be a string"
    if kind == "integer" and (isinstance(value, bool) or not isinstance(value, int)):
        return f"{where} must be an integer"
    if kind == "number" and (isinstance(value, bool) or not isinstance(value, int | float)):
        return f"{where} must be a number"
    if kind in ("integer", "number") and "minimum" in schema and value < schema["minimum"]:
        return f"{where} must be at least {schema['minimum']}"
    return None
