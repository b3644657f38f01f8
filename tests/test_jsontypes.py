"""The JSON readers narrow without converting: a file read and written again is the same file, and a value of
the wrong kind is a `TypeError` naming what was expected."""

from __future__ import annotations

import json

import pytest

from optimizer.jsontypes import (
    array,
    dict_of,
    dict_of_records,
    flag,
    integer,
    list_of,
    list_of_records,
    number,
    obj,
    optional_number,
    optional_text,
    record,
    text,
)


def test_each_reader_returns_the_value_it_was_given():
    assert text("a") == "a"
    assert integer(3) == 3
    assert flag(False) is False
    # A whole number where a float is expected stays an int, so it is written back as `2`, not `2.0`.
    assert type(number(2)) is int and number(2.5) == 2.5
    assert json.dumps(number(2)) == "2"
    assert record({"k": 1}) == {"k": 1}
    assert array([1, "a"]) == [1, "a"]
    assert obj({"k": [1]}) == {"k": [1]}


@pytest.mark.parametrize(
    ("read", "value", "expected"),
    [
        (text, 7, "a string"),
        (integer, "many", "an integer"),
        (integer, 2.5, "an integer"),
        (integer, True, "an integer"),  # a bool is an int to Python, never a count in a file
        (number, False, "a number"),
        (number, "1.5", "a number"),
        (number, None, "a number"),
        (flag, 1, "true or false"),
        (record, ["k"], "an object"),
        (array, "[1]", "an array"),
        (array, {"k": 1}, "an array"),
    ],
)
def test_a_value_of_another_kind_is_a_type_error_naming_the_kind(read, value, expected):
    with pytest.raises(TypeError, match=f"expected {expected}, got {type(value).__name__}"):
        read(value)


def test_optional_readers_let_null_through_and_nothing_else_of_another_kind():
    assert optional_text(None) is None and optional_text("v1") == "v1"
    assert optional_number(None) is None and optional_number(0) == 0
    with pytest.raises(TypeError, match="a string"):
        optional_text(["v1"])


def test_collections_are_read_item_by_item():
    assert list_of(["a", "b"], text) == ["a", "b"]
    assert dict_of({"x": 1, "y": 2}, integer) == {"x": 1, "y": 2}
    assert list_of_records([{"n": 1}, {"n": 2}], lambda r: integer(r["n"])) == [1, 2]
    assert dict_of_records({"a": {"n": 1}}, lambda r: integer(r["n"])) == {"a": 1}
    with pytest.raises(TypeError, match="an integer"):
        dict_of({"x": 1, "y": "2"}, integer)
    with pytest.raises(TypeError, match="an object"):
        list_of_records([{"n": 1}, 2], lambda r: integer(r["n"]))
