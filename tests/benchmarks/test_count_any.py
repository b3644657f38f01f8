"""`benchmarks/count_any.py` counts what its docstring says: public functions and methods with `Any` in their
signature (quoted annotations included), the JSON codecs among them, and `dict`/`Mapping[str, Any]` in the text."""

from __future__ import annotations

import subprocess

import pytest

from tests.conftest import ROOT, benchmark_module


@pytest.fixture(scope="module")
def bench():
    yield from benchmark_module("count_any")


SOURCE = """
from typing import Any, TYPE_CHECKING
import typing


def public(x: Any) -> int: ...
def returns(x: int) -> "dict[str, Any]": ...
def typed(x: int, *rest: str, **more: float) -> None: ...
def _private(x: Any) -> Any: ...
def keywords(**kw: typing.Any) -> None: ...


class Record:
    def to_dict(self) -> dict[str, Any]: ...
    @classmethod
    def from_dict(cls, data: "Mapping[str, Any]") -> "Record": ...
    def __call__(self, event: Any) -> None: ...
    def _helper(self, x: Any) -> None: ...

    def outer(self) -> None:
        def inner(x: Any) -> None: ...


class _Hidden:
    def to_dict(self) -> Any: ...


if TYPE_CHECKING:
    def guarded(x: Any) -> None: ...

note: dict[str, Any] = {}
"""


def test_public_signatures_with_any_and_the_codecs_among_them(bench):
    counts = bench.count_source(SOURCE)
    # public, returns, keywords, to_dict, from_dict, __call__, guarded; not typed, outer (no Any), the private ones
    assert counts == bench.Counts(files=1, public=9, public_any=7, codecs_any=2, dict_any=3, mapping_any=1)


def test_a_commit_is_counted_per_package_from_git_and_a_missing_package_counts_zero(bench):
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
    counts = bench.count_rev(head.stdout.strip(), ("optimizer/jsontypes.py", "optimizer/no_such_package"))
    assert counts["optimizer/jsontypes.py"].files == 1 and counts["optimizer/jsontypes.py"].public_any == 0
    assert counts["optimizer/no_such_package"] == bench.Counts()
    assert counts["total"] == counts["optimizer/jsontypes.py"]
