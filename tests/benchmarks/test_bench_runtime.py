"""`benchmarks/bench_runtime.py` on a short conversation: the runtime matches the loop, and says so."""

from __future__ import annotations

import importlib.util
import json
import sys

from tests.conftest import ROOT


def test_runtime_benchmark_matches_the_loop_and_writes_its_table(tmp_path, monkeypatch, capsys):
    spec = importlib.util.spec_from_file_location("bench_runtime", ROOT / "benchmarks" / "bench_runtime.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "runtime.json"
    monkeypatch.setattr(sys, "argv", ["bench_runtime.py", "--steps", "20", "--json", str(out)])
    bench.main()
    printed = capsys.readouterr().out
    assert "| strategy | requests | compressor calls loop / runtime" in printed
    rows = json.loads(out.read_text())["rows"]
    assert {r["strategy"] for r in rows} == set(bench.STRATEGIES)
    for row in rows:
        assert row["identical_requests"] and row["breaks_without_compression"] == 0
        assert row["runtime_compressor_calls"] == row["loop_compressor_calls"] == row["loop_compressor_calls_made"]
    assert any(r["loop_compressor_calls"] > 0 for r in rows)  # the LLM guidelines did compress
