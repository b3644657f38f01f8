"""Benchmarks that start model servers stop them when they are stopped."""

from __future__ import annotations

from tests.conftest import ROOT


def test_every_benchmark_that_starts_a_model_server_stops_it_on_sigterm():
    # Without the handler SIGTERM ends the process at once and the servers it started run on.
    for path in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        source = path.read_text()
        if "ModelEndpoints" in source or "LocalServers" in source:
            assert "exit_cleanly_on_sigterm()" in source, path.name
