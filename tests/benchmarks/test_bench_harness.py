"""The harness benchmark's code path, at tiny sizes (the figures themselves are not asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import benchmark_module

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    yield from benchmark_module("bench_harness")


def test_replay_responder_answers_with_the_reference_then_finish(bench):
    from tasks.builtin import BuiltinSuite

    task = BuiltinSuite(n_tasks=1).load().tasks[0]
    responder = bench.ReplayResponder([task])
    request = {"messages": [{"role": "system", "content": "agent"}, {"role": "user", "content": task.instruction}]}
    replies = [json.loads(responder(request)) for _ in task.reference]
    calls = [s.call for s in task.reference if s.call is not None]
    assert [r["tool"] for r in replies[: len(calls)]] == [c.name for c in calls]
    assert replies[0]["arguments"] == dict(calls[0].arguments)
    assert replies[-1]["tool"] == "finish"
    responder.reset()
    assert json.loads(responder(request))["tool"] == calls[0].name
    # Not an agent request of a known task (a compressor prompt, the system-token probe): the scripted models.
    probe = {"messages": [{"role": "system", "content": "agent"}, {"role": "user", "content": "."}]}
    assert json.loads(responder(probe))["tool"] == "finish"


def test_benchmark_runs_end_to_end_and_writes_json(bench, tmp_path, capsys):
    out = tmp_path / "harness.json"
    result = bench.run_benchmark(
        ["--tasks", "3", "--repeats", "1", "--concurrency", "1,2", "--latency-ms", "5", "--out", str(out)]
    )
    printed = capsys.readouterr().out
    assert "episodes/min" in printed and "speed-up" in printed
    assert json.loads(out.read_text()) == json.loads(json.dumps(result))
    rows = {(r["tier"], r["strategy"]): r for r in result["throughput"]}
    assert set(rows) == {(t, s) for t in (0, 1) for s in bench.STRATEGIES}
    for (tier, strategy), row in rows.items():
        assert row["episodes"] == 3 and row["infra_errors"] == 0 and row["episodes_per_min"] > 0
        if strategy != "guideline":  # the stub's compressor is lossy on purpose; the replay is exact
            assert row["successes"] == 3, (tier, strategy)
        assert (row["model_ms_per_step"] > 0) == (tier == 1)
    assert rows[(0, "guideline")]["compressor_calls"] > 0 and rows[(0, "guideline")]["compressor_cache_hits"] == 0
    sweep = [(r["latency_ms"], r["concurrency"]) for r in result["concurrency"]]
    assert sweep == [(0.0, 1), (0.0, 2), (5.0, 1), (5.0, 2)]
    assert all(r["successes"] == 3 for r in result["concurrency"])
    assert result["concurrency"][0]["speedup"] == 1.0
    assert "real" not in result


def test_real_part_accounts_wall_time_against_any_endpoint(bench, tmp_path):
    # The --real code path, on the stub instead of the local model (50 ms per request).
    from optimizer.llm.endpoint import EndpointConfig
    from optimizer.testing.stub_server import StubServer

    tasks = bench.real_tasks(2)
    with StubServer(bench.ReplayResponder(tasks), latency_s=0.05) as url:
        real = bench.bench_real(
            2, workdir=tmp_path, log=lambda _: None, config=EndpointConfig(base_url=url, model="stub", backoff_s=0.0)
        )
    assert [e["outcome"] for e in real["episodes"]] == ["success", "success"]
    assert real["retries"] == 0 and real["system_probe_s"] > 0
    assert real["model_s"] < real["endpoint_s"] < real["wall_s"]  # the probe is an endpoint call, not a step
    assert 0 < real["outside_endpoint_share"] < real["outside_share"] < 1
    print(bench.real_table(real))
