from __future__ import annotations

import json

import pytest

from optimizer.world.needs import find_needs, guesses, occurs
from optimizer.world.task import NeedKind
from optimizer.world.tool import ToolCall

USERS = json.dumps({"users": [{"id": "USR001", "name": "Alice"}, {"id": "USR002", "name": "Bob"}], "ticket": "TCK0009"})


def needs(arguments, *, user="Please do the thing.", outputs=(USERS,), **kwargs):
    return find_needs(ToolCall("c1", "tool", arguments), user_texts=[user], tool_outputs=list(outputs), **kwargs)


def test_value_seen_only_in_tool_output_is_a_need_with_a_sibling_guess():
    (need,) = needs({"receiver_id": "USR002", "message": "hello"})
    assert need.kind is NeedKind.VALUE
    assert (need.literal, need.argument) == ("USR002", "receiver_id")
    # The nearest sibling under the same JSON key, not the ticket id of a similar shape.
    assert need.guess == "USR001"


def test_value_the_user_typed_is_not_a_need_even_in_another_case():
    assert needs({"receiver_id": "USR002"}, user="send it to usr002") == ()


def test_value_in_no_text_at_all_is_not_a_need():
    assert needs({"receiver_id": "USR777"}) == ()


def test_trivial_literals_are_never_needs():
    output = json.dumps({"count": 5, "limit": 100, "flag": True, "dir": "tmp", "side": "Buy", "kind": "none"})
    call = {"count": 5, "limit": 100, "flag": True, "dir": "tmp", "side": "Buy", "kind": None}
    assert needs(call, outputs=[output]) == ()


def test_known_texts_such_as_tool_schemas_count_like_user_texts():
    output = json.dumps({"doors": {"driver": "unlocked", "passenger": "locked"}})
    assert needs({"door": ["driver"]}, outputs=[output]) != ()
    schema = "door: list of doors to lock: driver, passenger, rear_left, rear_right"
    assert needs({"door": ["driver"]}, outputs=[output], known_texts=[schema]) == ()


def test_numbers_are_stringified_and_matched_whole():
    output = json.dumps({"orders": [12446, 12447], "price": 150.0, "total": 15000})
    (order,) = needs({"order_id": 12446}, outputs=[output])
    assert order.literal == "12446"
    assert order.guess == 12447 and isinstance(order.guess, int)
    (price,) = needs({"price": 150.0}, outputs=[output])
    assert price.literal == "150.0" and isinstance(price.guess, float) and price.guess != 150.0
    # The user wrote the integral form: visible without the output.
    assert needs({"price": 150.0}, outputs=[output], user="buy at $150") == ()
    # 1500 is not inside 15000, 12446 not inside 124467.
    assert needs({"amount": 1500}, outputs=[output]) == ()
    assert needs({"order_id": 12446}, outputs=[json.dumps({"id": 124467})]) == ()


def test_substrings_of_longer_words_do_not_count():
    output = json.dumps({"files": ["final_report.pdf", "notes.txt"]})
    assert needs({"file_name": "report.pdf"}, outputs=[output]) == ()
    (need,) = needs({"file_name": "final_report.pdf"}, outputs=[output], user="open report.pdf")
    assert need.literal == "final_report.pdf"


def test_lists_and_dicts_are_searched_leaf_by_leaf_and_guesses_keep_their_shape():
    (need,) = needs({"ids": ["USR002", "somebody"], "flag": True})
    assert need.argument == "ids" and need.guess == ["USR001", "somebody"]
    (need,) = needs({"payload": {"to": "USR002", "note": "x"}})
    assert need.guess == {"to": "USR001", "note": "x"}


def test_json_escaped_strings_use_the_form_visible_in_the_output():
    value = 'Café "Zeta" 42'
    output = json.dumps({"title": value})
    (need,) = needs({"title": value}, outputs=[output])
    assert need.literal in output and need.literal == json.dumps(value)[1:-1]


def test_guess_falls_back_to_altering_the_literal():
    output = "Your access token is 251675."
    (need,) = needs({"access_token": "251675"}, outputs=[output])
    assert need.guess == "251676"
    assert guesses("Thompson", "Thompson") == ["Thompsoo"]
    assert guesses(980.0, json.dumps({"distance": 980.0}))[:1] == [980.1]


def test_accept_vets_guesses_in_order_and_drops_a_need_none_can_replace():
    first = needs({"receiver_id": "USR002"})[0].guess
    (second,) = needs({"receiver_id": "USR002"}, accept=lambda need: need.guess != first)
    assert second.guess not in (first, "USR002")
    assert needs({"receiver_id": "USR002"}, accept=lambda need: False) == ()


def test_source_class_comes_from_the_first_output_carrying_the_literal():
    outputs = ["nothing here", USERS, USERS]
    (need,) = needs({"receiver_id": "USR002"}, outputs=outputs, output_classes=["static", "dynamic_state", "x"])
    assert need.source_class == "dynamic_state"


def test_same_literal_twice_in_one_argument_is_one_need_and_results_are_deterministic():
    call = {"ids": ["USR002", "USR002"], "other": "USR001"}
    first = needs(call)
    assert [(n.argument, n.literal) for n in first] == [("ids", "USR002"), ("other", "USR001")]
    assert needs(call) == first


@pytest.mark.parametrize(
    ("summary", "shown"),
    [
        ('{"sku": "SKU-1708", "units_in_stock": 17, "warehouse": "Porto"}', True),
        ("- units_in_stock = 17", True),  # the 0.5B summarizer's VARIABLES line
        ("- **units_in_stock**: 17", True),
        ("`units_in_stock` = 17 left", True),
        ("units_in_stock = 170", False),
        ("units_in_stock = 17.5", False),
        ("stock = 17", False),
        ("old_units_in_stock = 17", False),
        ("17 units in stock", False),
    ],
)
def test_a_number_named_by_its_json_key_occurs_rewritten_under_the_same_key(summary, shown):
    assert occurs('"units_in_stock": 17', summary) is shown


def test_only_a_number_is_read_through_a_rewritten_pair():
    # a string under a key (an error message) stays verbatim: its quotes and escapes are what a tool printed
    assert not occurs('"error": "no such file"', "error: no such file")
    assert occurs('"error": "no such file"', '{"error": "no such file"}')
