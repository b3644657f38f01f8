"""The Ray executor on a local cluster: the same episodes as local threads, runs that resume across
executors, a worker killed mid-episode (re-run once, recorded once), and an endpoint bound shared by every
worker that honours 429 + Retry-After."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from optimizer.config import RunConfig
from optimizer.context.strategies import parse_strategy
from optimizer.evaluate.codec import encode_episode
from optimizer.evaluate.endpoints import ModelEndpoints
from optimizer.evaluate.executors import LocalExecutor, RayExecutor
from optimizer.evaluate.runner import AgentSpec, run_tasks
from optimizer.llm.endpoint import EndpointConfig
from optimizer.mining.pairs import find_pairs
from optimizer.testing.dying import dies_once_task
from optimizer.testing.scripted import scripted_models
from optimizer.testing.stub_server import FaultPlan, StubServer
from tasks.builtin import BuiltinSuite

ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install 'acon[ray]')")

RAY = RayExecutor(local_cpus=4, cpus_per_episode=1)
TIMINGS = ("wall_s", "latency_s", "started_s", "model_s")


@pytest.fixture(scope="module", autouse=True)
def cluster():
    from optimizer.evaluate.executors.ray import connect

    connect(RAY)
    yield
    ray.shutdown()


def timeless(value, skip: tuple[str, ...] = ()):
    """A record without what measures this machine (durations), which no two runs share."""
    if isinstance(value, dict):
        return {k: timeless(v, skip) for k, v in value.items() if k not in TIMINGS + skip}
    if isinstance(value, list):
        return [timeless(v, skip) for v in value]
    return value


def run(
    tasks, directory: Path, executor, strategy: str = "fifo", *, endpoints=None, concurrency: int = 3, on_episode=None
):
    return run_tasks(
        tasks,
        parse_strategy(strategy),
        AgentSpec("reference"),
        endpoints=endpoints,
        directory=directory,
        meta={"key": strategy},
        concurrency=concurrency,
        executor=executor,
        on_episode=on_episode,
    )


def records(directory: Path) -> list[dict]:
    return [json.loads(line) for line in (directory / "episodes.jsonl").read_text().splitlines()]


def test_the_config_names_an_executor():
    assert RunConfig().executor == LocalExecutor()
    assert RunConfig(executor="ray").executor == RayExecutor()
    assert RunConfig(executor={"type": "ray", "address": "auto"}).executor.address == "auto"


def test_ray_runs_the_episodes_local_threads_run(tmp_path):
    tasks = BuiltinSuite(n_tasks=24, seed=3).load().tasks
    local = {s: run(tasks, tmp_path / f"local-{s}", LocalExecutor(), s) for s in ("none", "fifo")}
    remote = {s: run(tasks, tmp_path / f"ray-{s}", RAY, s) for s in ("none", "fifo")}
    for s in local:
        assert [timeless(encode_episode(e)) for e in remote[s]] == [timeless(encode_episode(e)) for e in local[s]], s
    pairs = find_pairs(local["none"], local["fifo"], near_misses=True)
    assert pairs, "fifo should lose a task of 24, else the pairs compare nothing"
    assert [(a.task_id, b.task_id) for a, b in find_pairs(remote["none"], remote["fifo"], near_misses=True)] == [
        (a.task_id, b.task_id) for a, b in pairs
    ]


def test_compressor_calls_from_workers_match_local_ones(tmp_path):
    tasks = BuiltinSuite(n_tasks=6, max_output_tokens=1500).load().tasks
    with StubServer(scripted_models) as url:
        config = EndpointConfig(base_url=url, model="scripted", backoff_s=0.0)
        with ModelEndpoints({"compressor": config}, log=lambda m: None) as endpoints:
            local = run(tasks, tmp_path / "local", LocalExecutor(), "llm_observation", endpoints=endpoints)
            remote = run(tasks, tmp_path / "ray", RAY, "llm_observation", endpoints=endpoints)
    calls = sum(e.metrics.compressor_calls for e in local)
    assert calls > 0
    # The workers read this node's reply cache, which the local run filled: the same replies, as cache hits.
    assert sum(e.metrics.compressor_cache_hits for e in remote) == calls
    cached = ("compressor_cached", "compressor_cache_hits")
    assert [timeless(encode_episode(e), cached) for e in remote] == [timeless(encode_episode(e), cached) for e in local]


@pytest.mark.parametrize(("first", "then"), [(RAY, LocalExecutor()), (LocalExecutor(), RAY)])
def test_a_run_killed_under_one_executor_resumes_under_the_other(tmp_path, first, then):
    tasks = BuiltinSuite(n_tasks=16, seed=5).load().tasks

    def killed_after_five(episode, seen=[]):  # noqa: B006 - a counter for this one run
        seen.append(episode.task_id)
        if len(seen) == 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(tasks, tmp_path / "run", first, on_episode=killed_after_five)
    before = records(tmp_path / "run")
    assert 5 <= len(before) < len(tasks)
    resumed = run(tasks, tmp_path / "run", then)
    after = records(tmp_path / "run")
    assert after[: len(before)] == before  # nothing recorded before the kill is redone or rewritten
    assert sorted(r["task_id"] for r in after) == sorted(t.id for t in tasks)  # each task once
    reference = run(tasks, tmp_path / "reference", LocalExecutor())
    assert [timeless(encode_episode(e)) for e in resumed] == [timeless(encode_episode(e)) for e in reference]


def test_a_worker_killed_mid_episode_reruns_it_once_and_records_it_once(tmp_path):
    marker = tmp_path / "killed"
    tasks = [dies_once_task(marker), *BuiltinSuite(n_tasks=3).load().tasks]
    result = run(tasks, tmp_path / "run", RAY, "none")
    assert marker.exists(), "the first attempt should have killed its worker"
    assert [r["task_id"] for r in records(tmp_path / "run")].count("dies-once") == 1
    assert result[0].success and len(result) == 4


def test_a_worker_killed_on_every_attempt_fails_the_run_and_keeps_the_rest(tmp_path):
    marker = tmp_path / "killed"
    tasks = [*BuiltinSuite(n_tasks=2).load().tasks, dies_once_task(marker)]
    never_retried = RAY.model_copy(update={"max_retries": 0})
    with pytest.raises(ray.exceptions.RayError):
        run(tasks, tmp_path / "run", never_retried, "none", concurrency=1)
    assert [r["task_id"] for r in records(tmp_path / "run")] == [t.id for t in tasks[:2]]
    resumed = run(tasks, tmp_path / "run", LocalExecutor(), "none")  # the marker is there: it answers now
    assert [e.task_id for e in resumed] == [t.id for t in tasks] and resumed[2].success


def test_the_endpoint_bound_is_shared_by_every_worker(tmp_path):
    tasks = BuiltinSuite(n_tasks=40, max_output_tokens=1500, seed=11).load().tasks  # replies not cached yet
    stub = StubServer(scripted_models, latency_s=0.05)
    with stub as url:
        config = EndpointConfig(base_url=url, model="scripted", backoff_s=0.0, concurrency=1)
        with ModelEndpoints({"compressor": config}, log=lambda m: None) as endpoints:
            result = run(tasks, tmp_path / "run", RAY, "llm_observation", endpoints=endpoints, concurrency=4)
    assert len(result) >= 6 and len(stub.requests) >= 8
    assert stub.most_in_flight == 1  # four workers, one request at a time, as the endpoint allows


def test_a_429_with_retry_after_pauses_every_worker(tmp_path):
    tasks = BuiltinSuite(n_tasks=40, max_output_tokens=1500, seed=12).load().tasks
    faults = FaultPlan(rate=0.15, kinds=("http_429",), seed=4, retry_after_s=0.6)
    stub = StubServer(scripted_models, faults=faults)
    with stub as url:
        config = EndpointConfig(base_url=url, model="scripted", backoff_s=0.0, concurrency=2, max_retries=6)
        with ModelEndpoints({"compressor": config}, log=lambda m: None) as endpoints:
            result = run(tasks, tmp_path / "run", RAY, "llm_observation", endpoints=endpoints, concurrency=4)
    assert faults.injected["http_429"] >= 1 and all(e.outcome != "infra_error" for e in result)
    for index, fault in enumerate(stub.faulted):
        if fault != "http_429":
            continue
        # No request from any worker reached the server within the pause the server asked for (less the
        # requests already past the gate when the 429 arrived: up to the bound, 2).
        window = [t for t in stub.times[index + 1 :] if t - stub.times[index] < 0.5]
        assert len(window) <= 2, (index, len(window))


def test_an_optimize_job_under_ray_chooses_what_it_chooses_locally(tmp_path):
    from optimizer.config import load_experiment
    from optimizer.search.job import OptimizationJob
    from tests.reliability.conftest import episode_lines, write_job

    def outcome(executor: str) -> dict:
        (tmp_path / executor).mkdir()
        with StubServer(scripted_models) as url:
            path = write_job(tmp_path / executor, url, budget={"rounds": 2}, train_limit=6)
            text = path.read_text().replace(
                'agent = "reference"', f'agent = "reference"\nexecutor = "{executor}"\nconcurrency = 3', 1
            )
            path.write_text(text)
            config = load_experiment(path)
            assert config.run.executor.type == executor
            report = OptimizationJob(config, log=lambda m: None).run()
        runs = episode_lines(tmp_path / executor / "job")
        return {
            "chosen": report.chosen.version,
            "rounds": [(r.summary.round, r.summary.pairs, r.summary.screened, r.summary.best) for r in report.rounds],
            "test": [(r.strategy, r.figures.tasks, r.figures.success, r.figures.peak_tokens_mean) for r in report.rows],
            # By content: a run's key names the compressor endpoint, and each job's stub has its own port.
            "runs": sorted(
                (
                    run.rsplit("-", 1)[0],
                    sorted((r["task_id"], r["outcome"], r["metrics"]["peak_tokens"]) for r in records),
                )
                for run, records in runs.items()
            ),
        }

    local, remote = outcome("local"), outcome("ray")
    assert any(pairs for _, pairs, _, _ in local["rounds"]), "a job that mines no pair compares little"
    assert remote == local


def test_ray_missing_is_one_line_before_any_episode(tmp_path, monkeypatch):
    import sys

    from optimizer.errors import ConfigError

    monkeypatch.setitem(sys.modules, "ray", None)  # as if the extra were not installed
    with pytest.raises(ConfigError, match=r'executor = "ray" needs Ray: pip install "acon\[ray\]"'):
        run(BuiltinSuite(n_tasks=2).load().tasks, tmp_path / "run", RayExecutor(), "none")
    assert not (tmp_path / "run" / "episodes.jsonl").exists() or not (tmp_path / "run" / "episodes.jsonl").read_text()
