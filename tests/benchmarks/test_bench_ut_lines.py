"""The optimizer-lines probe on a scripted optimizer: lost facts found per suite, each reply judged by the UT
step's own checks, the table and JSON written."""

from __future__ import annotations

import json

import pytest

from tests.conftest import benchmark_module


@pytest.fixture(scope="module")
def bench():
    yield from benchmark_module("bench_ut_lines")


def test_the_probe_counts_usable_lines_and_refusals_per_kind(bench, tmp_path, capsys):
    out = tmp_path / "ut.json"
    assert bench.main(["--scripted", "--tasks", "4", "--per-kind", "2", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["scripted"] and set(report["suites"]) == {"builtin", "reach_long"}
    rule = report["suites"]["reach_long"]["rule"]
    value = report["suites"]["reach_long"]["value"]
    # The scripted optimizer protects rules in a usable sentence and answers values with a summary row.
    assert rule["usable"] == rule["asked"] > 0
    assert value["usable"] == 0 and value["refused"] == {"names an id-like value": value["asked"]}
    assert "| reach_long | value |" in capsys.readouterr().out
