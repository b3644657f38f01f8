"""Tool registrations more than one suite declares: reading a skill file, issuing a refund, the shop desk's tools.

One declaration keeps their retention metadata (a skill's class, a refund being a write) the same
wherever a task offers them, so a learned rule keyed on the tool name means one thing.
"""

from __future__ import annotations

from optimizer.world.retention import RetentionClass
from optimizer.world.tool import ToolSpec, object_schema

READ_SKILL = ToolSpec(
    "read_skill", "Read a skill file by name.", object_schema(name="string"), retention_class=RetentionClass.SKILL
)

ISSUE_REFUND = ToolSpec(
    "issue_refund",
    "Refund an amount on an order.",
    object_schema(order_id="string", amount="number"),
    side_effect=True,
)

# The shop desk (`reach`, `reach_long`): a product's sheet and stock, a customer's orders, payouts.

GET_PRODUCT = ToolSpec(
    "get_product",
    "Read a product's sheet by SKU.",
    object_schema(sku="string"),
    retention_class=RetentionClass.STATIC,
)

LIST_ORDERS = ToolSpec(
    "list_orders",
    "List a customer's orders, one page at a time (page starts at 1).",
    object_schema(customer_id="string", page="integer"),
    retention_class=RetentionClass.STATIC,
)

GET_STOCK = ToolSpec(
    "get_stock",
    "Read the units in stock for a SKU.",
    object_schema(sku="string"),
    retention_class=RetentionClass.DYNAMIC_STATE,
)

RESERVE_STOCK = ToolSpec(
    "reserve_stock",
    "Reserve units of a SKU. Returns the reservation id.",
    object_schema(sku="string", units="integer"),
    side_effect=True,
)

VERIFY_CUSTOMER = ToolSpec(
    "verify_customer",
    "Verify a customer's identity before a payout.",
    object_schema(customer_id="string"),
    side_effect=True,
)

SEND_GIFT_CARD = ToolSpec(
    "send_gift_card",
    "Send a gift card to a customer. Returns the gift card id.",
    object_schema(customer_id="string", amount="number"),
    side_effect=True,
)
