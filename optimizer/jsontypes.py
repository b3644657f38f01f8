"""JSON as a type, for the files and records acon writes and reads back (report.json, state.json, the journal).

A writer returns a `JSONObject`: a fresh dict whose values are any JSON. A reader takes a `JSONRecord`, a
read-only view, so that a dict of narrower values (`dict[str, int]`) fits it too, and reads each field through
one of the narrowing functions below. Each returns the value it was given, unconverted (an `int` stays an `int`
where a `float` is expected, so a file read and written again is the same file), and raises `TypeError` naming
what it expected when the value is of another kind: the readers' callers already report a `TypeError` as a
damaged file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypeAlias, TypeVar

JSON: TypeAlias = "bool | int | float | str | Sequence[JSON] | Mapping[str, JSON] | None"
JSONObject: TypeAlias = dict[str, JSON]
JSONRecord: TypeAlias = Mapping[str, JSON]

T = TypeVar("T")


def _wrong(expected: str, value: JSON) -> TypeError:
    return TypeError(f"expected {expected}, got {type(value).__name__} {value!r:.80}")


def text(value: JSON) -> str:
    if not isinstance(value, str):
        raise _wrong("a string", value)
    return value


def integer(value: JSON) -> int:
    # `bool` is an `int` to Python, never to JSON: `true` where a count was written is a damaged file.
    if not isinstance(value, int) or isinstance(value, bool):
        raise _wrong("an integer", value)
    return value


def number(value: JSON) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise _wrong("a number", value)
    return value


def flag(value: JSON) -> bool:
    if not isinstance(value, bool):
        raise _wrong("true or false", value)
    return value


def record(value: JSON) -> JSONRecord:
    """A JSON object."""
    if not isinstance(value, Mapping):
        raise _wrong("an object", value)
    return value


def array(value: JSON) -> Sequence[JSON]:
    """A JSON array (a string is not one)."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise _wrong("an array", value)
    return value


def optional(read: Callable[[JSON], T]) -> Callable[[JSON], T | None]:
    """`read`, letting null through: `optional(text)(None)` is None."""

    def read_optional(value: JSON) -> T | None:
        return None if value is None else read(value)

    return read_optional


def list_of(value: JSON, read: Callable[[JSON], T]) -> list[T]:
    return [read(item) for item in array(value)]


def dict_of(value: JSON, read: Callable[[JSON], T]) -> dict[str, T]:
    return {key: read(item) for key, item in record(value).items()}


def list_of_records(value: JSON, read: Callable[[JSONRecord], T]) -> list[T]:
    """An array of objects, each read by `read` (a `from_dict`)."""
    return [read(record(item)) for item in array(value)]


def dict_of_records(value: JSON, read: Callable[[JSONRecord], T]) -> dict[str, T]:
    """An object of objects, each read by `read` (a `from_dict`)."""
    return {key: read(record(item)) for key, item in record(value).items()}


def obj(value: JSON) -> JSONObject:
    """A JSON object, as a dict of its own."""
    return dict(record(value))


optional_text = optional(text)
optional_integer = optional(integer)
optional_number = optional(number)
