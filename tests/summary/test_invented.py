"""Invented values: the ids and amounts the 1.5B summarizer made up on a `reach_long` train task, and the
values a summary may state because a message held them."""

from __future__ import annotations

from optimizer.summary.invented import invented_values, lines_with

HISTORY = (
    "A customer wrote about order ORD-06156. Reserve 1 unit; answer 'reservation <reservation id, RSV-...>'.",
    "Tool result of get_customer:\ncustomer_id: CUS-214",
    "Tool result of get_product:\nSKU-5810 spec 01: material\nunit price: 35.89 EUR",
    "Error: order 'ORD-06156' not found. Did you mean ORD-6156?",
    "RULE-RS-09: after every reserve_stock, call get_stock again.",
)
# The summary as the 1.5B summarizer wrote it under the seed's VARIABLES section.
MADE_UP = (
    "VARIABLES: customer_id = CUS-214, order_id = ORD-06156, sku = SKU-123, unit_price = 10.00, "
    "units_left_in_stock = 10, reservation_id = RSV-456"
)


def test_ids_and_amounts_no_message_held_are_invented():
    assert invented_values(MADE_UP, HISTORY) == ("SKU-123", "10.00", "RSV-456")


def test_values_a_message_held_are_not_invented_whatever_their_shape():
    summary = (
        "- Order ORD-6156 (asked as ORD-06156) is for SKU-5810 at 35.89 EUR; customer CUS-214.\n"
        "- RULE-RS-09 applies. The answer template holds <reservation id, RSV-...>; 10 units were checked."
    )
    assert invented_values(summary, HISTORY) == ()


def test_a_value_inside_a_longer_one_is_not_a_match():
    # "CUS-21" occurs in the history only inside CUS-214: stating it is stating a different id.
    assert invented_values("customer CUS-21 paid 5.8 EUR", HISTORY) == ("CUS-21", "5.8")


def test_the_lines_shown_to_the_optimizer_are_those_stating_an_invented_value():
    summary = f"PROGRESS: read the skill.\n{MADE_UP}\nDONE: nothing yet."
    assert lines_with(summary, invented_values(summary, HISTORY)) == (MADE_UP,)
    assert lines_with(summary, ()) == ()
