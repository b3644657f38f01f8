"""The restated-task ledger: stored tier-1 episodes with a summary, split by whether one restated the task."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import ROOT, benchmark_module

VAL = ROOT / "benchmarks" / "results" / "runs_summary_reach_long_langchain_val"
BY_CALL = "langchain_summary-llm-train-74b5939c1e"


@pytest.fixture(scope="module")
def ledger():
    yield from benchmark_module("restated_ledger")


def test_the_by_call_run_is_named_for_its_text_and_counts_its_restated_summaries(ledger, tmp_path, capsys):
    root = tmp_path / "runs"
    shutil.copytree(VAL / BY_CALL, root / BY_CALL)
    out = tmp_path / "ledger.json"
    assert ledger.main([str(root), "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    text = report["by_text"]["qwen2.5-coder-1.5b / facts-by-call+contract"]
    assert (text["summaries"], text["restating"], text["episodes"], text["solved"]) == (30, 5, 10, 0)
    split = report["by_summarizer"]["qwen2.5-coder-1.5b"]
    assert split["restated"]["episodes"] == 5 and split["not_restated"]["episodes"] == 5
    assert "| qwen2.5-coder-1.5b | facts-by-call+contract | 5 of 30 | 0 of 10 |" in capsys.readouterr().out


def test_a_test_split_run_is_never_read(ledger, tmp_path, capsys):
    run = tmp_path / "runs" / BY_CALL
    shutil.copytree(VAL / BY_CALL, run)
    meta = json.loads((run / "meta.json").read_text())
    (run / "meta.json").write_text(json.dumps(meta | {"split": "test"}))
    assert ledger.main([str(run.parent), "--out", str(tmp_path / "l.json")]) == 1
    assert "no stored tier-1 episode with a summary" in capsys.readouterr().err


def test_a_missing_directory_is_one_line(ledger, tmp_path, capsys):
    assert ledger.main([str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
