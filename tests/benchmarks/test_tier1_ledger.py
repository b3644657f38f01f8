"""The tier-1 ledger: every compressing strategy against full context on the same stored cells, by depth of cut."""

from __future__ import annotations

import json

import pytest

from tests.conftest import ROOT, benchmark_module

JOB8 = ROOT / "benchmarks" / "results" / "runs_reach_long_job8"


@pytest.fixture(scope="module")
def bench():
    yield from benchmark_module("tier1_ledger")


def test_the_fifth_jobs_confirmations_pair_with_full_context_and_the_test_split_is_not_read(bench, tmp_path, capsys):
    out = tmp_path / "ledger.json"
    assert bench.main([str(JOB8), "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["cells"] and all(c["split"] != "test" for c in report["cells"])
    # The job's confirmation: 4 validation tasks x 2 seeds, full context passing all 8 (its README figures).
    strict = report["strategies"]["guideline:mask_last_n+strict@eb8583576984"]
    assert (strict["cells"], strict["full_passed"]) == (8, 8) and strict["passed"] == 5
    assert strict["depth"] < 0.5 and strict["difference"]["mean"] == pytest.approx((5 - 8) / 8)
    low, high = strict["difference"]["low"], strict["difference"]["high"]
    assert low <= strict["difference"]["mean"] <= high
    # Each strategy falls in exactly one band of depth.
    banded = [n for band in report["bands"].values() for n in band["strategies"]]
    assert sorted(banded) == sorted(report["strategies"])
    assert "at most 0.5 x" in capsys.readouterr().out


def test_a_missing_directory_is_one_line(bench, tmp_path, capsys):
    assert bench.main([str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_a_directory_without_tier1_cells_is_an_error_not_an_empty_table(bench, tmp_path, capsys):
    assert bench.main([str(tmp_path), "--out", str(tmp_path / "x.json")]) == 1
    assert not (tmp_path / "x.json").exists()
