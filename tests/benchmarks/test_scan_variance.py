"""The variance scan over stored tier-1 episodes: a failure that parted from full context at an identical request."""

from __future__ import annotations

import json

import pytest

from tests.conftest import ROOT, benchmark_module

JOB7 = ROOT / "benchmarks" / "results" / "runs_reach_long_job7"


@pytest.fixture(scope="module")
def bench():
    yield from benchmark_module("scan_variance")


def test_the_fourth_jobs_only_request_identical_failure_is_found(bench, tmp_path, capsys):
    out = tmp_path / "variance.json"
    assert bench.main([str(JOB7), "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    variance = [c for c in report["cells"] if c["variance"]]
    # `clear_tool_uses` never fires on these tasks: its requests are full context's, so its one failure is sampling.
    assert [(c["strategy"], c["split"]) for c in variance] == [("guideline:clear_tool_uses@ecd36ebfe0e0", "train")]
    assert report["failures"] > len(variance) and all(c["split"] != "test" for c in report["cells"])
    assert "parted from full context at an identical request" in capsys.readouterr().out


def test_a_missing_directory_is_one_line(bench, tmp_path, capsys):
    assert bench.main([str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
