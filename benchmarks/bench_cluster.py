"""Past one machine: the Ray executor on a local cluster against the local executor, on one machine.

One command (`python benchmarks/bench_cluster.py`, `--quick` for fewer tasks) prints two tables and
writes `benchmarks/results/cluster.json`:

1. **Throughput.** Tier-1 episodes (the `llm` agent under `none`, built-in tasks of all splits) against the
   stub server with a fixed per-request latency, the stub replaying each task's reference calls (as in
   `bench_harness.py`), after one untimed pass of each executor (worker start-up is reported apart), at 1,
   2, 4 and 8 workers: threads of this process (`local`) and Ray tasks on a local cluster started by the
   benchmark (`ray.init()` here, 8 CPUs declared so 8 episodes can be in flight on a 2-core machine: they
   wait on the model, not the CPU). The endpoint's own bound is 8. Episodes per minute and Ray / local.
2. **Equality.** A tier-0 screen (`reference` agent, `clear_tool_uses`) of 1,000 built-in tasks through
   Ray and through local threads: per task, outcome, success, peak tokens, steps and reasons must agree.

Both executors write every episode to a fresh run directory (no reuse), so the figures include the
records. Absolute numbers on a shared 2-core VM are noisy; compare the ratios within one run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from benchmarks.bench_harness import ReplayResponder, stub_endpoints  # noqa: E402
from optimizer.context.strategies import parse_strategy  # noqa: E402
from optimizer.evaluate.executors import Executor, LocalExecutor, RayExecutor  # noqa: E402
from optimizer.evaluate.executors.ray import connect  # noqa: E402
from optimizer.evaluate.runner import AgentSpec, run_tasks  # noqa: E402
from optimizer.interrupts import run_main  # noqa: E402
from tasks.builtin import BuiltinSuite  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
WORKERS = (1, 2, 4, 8)
LATENCY_S = 0.05
RAY = RayExecutor(local_cpus=8, cpus_per_episode=1)


def timed_run(tasks, strategy: str, agent: str, endpoints, executor: Executor, workers: int, workdir: Path):
    directory = Path(tempfile.mkdtemp(prefix=f"{executor.type}-w{workers}-", dir=workdir))
    started = time.perf_counter()
    episodes = run_tasks(
        tasks,
        parse_strategy(strategy),
        AgentSpec(agent),
        endpoints=endpoints,
        directory=directory,
        meta={"key": directory.name},
        concurrency=workers,
        executor=executor,
    )
    return time.perf_counter() - started, episodes


def throughput(n_tasks: int, workdir: Path) -> list[dict[str, Any]]:
    tasks = list(BuiltinSuite(n_tasks=n_tasks).load().tasks)
    responder = ReplayResponder(tasks)
    rows = []
    with stub_endpoints(responder, latency_s=LATENCY_S, concurrency=max(WORKERS), roles=("agent",)) as endpoints:
        # One untimed pass per executor: Ray starts its worker processes (and their imports, endpoints and
        # caches) on first use, and at one worker a task may land on any of the eight.
        for executor in (LocalExecutor(), RAY):
            responder.reset()
            timed_run(tasks, "none", "llm", endpoints, executor, max(WORKERS), workdir)
        for workers in WORKERS:
            row: dict[str, Any] = {"workers": workers, "latency_ms": 1000 * LATENCY_S, "tasks": len(tasks)}
            for executor in (LocalExecutor(), RAY):
                responder.reset()
                wall, episodes = timed_run(tasks, "none", "llm", endpoints, executor, workers, workdir)
                summaries = episodes.summaries
                row[executor.type] = {
                    "wall_s": round(wall, 2),
                    "episodes_per_min": round(60 * len(summaries) / wall, 1),
                    "successes": sum(s.success for s in summaries),
                    "steps": sum(s.metrics.steps for s in summaries),
                    "infra_errors": sum(s.outcome == "infra_error" for s in summaries),
                }
            row["ray_over_local"] = round(row["ray"]["episodes_per_min"] / row["local"]["episodes_per_min"], 2)
            print(
                f"  {workers} workers: local {row['local']['episodes_per_min']:.0f}/min, "
                f"ray {row['ray']['episodes_per_min']:.0f}/min (x{row['ray_over_local']:.2f})",
                file=sys.stderr,
                flush=True,
            )
            rows.append(row)
    return rows


def screen_equality(n_tasks: int, workdir: Path) -> dict[str, Any]:
    tasks = BuiltinSuite(n_tasks=n_tasks).load().tasks
    out: dict[str, Any] = {"tasks": n_tasks, "strategy": "clear_tool_uses", "workers": 2}
    per_task = {}
    for executor in (LocalExecutor(), RAY):
        wall, episodes = timed_run(tasks, "clear_tool_uses", "reference", None, executor, 2, workdir)
        per_task[executor.type] = [
            (s.task_id, s.outcome, s.metrics.peak_tokens, s.metrics.steps, s.reasons) for s in episodes.summaries
        ]
        out[executor.type] = {
            "wall_s": round(wall, 1),
            "episodes_per_min": round(60 * n_tasks / wall, 1),
            "success": sum(s.success for s in episodes.summaries) / n_tasks,
        }
        print(f"  screen of {n_tasks} via {executor.type}: {wall:.1f} s", file=sys.stderr, flush=True)
    mismatched = [a[0] for a, b in zip(per_task["local"], per_task["ray"], strict=True) if a != b]
    out["identical_per_task"] = not mismatched
    out["mismatched_tasks"] = mismatched
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="24 throughput tasks and a 200-task screen.")
    parser.add_argument("--tasks", type=int, default=None, help="Tasks per throughput point (default 48).")
    parser.add_argument("--screen", type=int, default=None, help="Tasks of the equality screen (default 1,000).")
    args = parser.parse_args()
    n_tasks = args.tasks or (24 if args.quick else 48)
    n_screen = args.screen or (200 if args.quick else 1000)
    import ray

    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp:
        started = time.perf_counter()
        connect(RAY)
        ray_start_s = time.perf_counter() - started
        try:
            rows = throughput(n_tasks, Path(tmp))
            screen = screen_equality(n_screen, Path(tmp))
        finally:
            ray.shutdown()
    result = {
        "measured": dt.datetime.now().isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "ray": ray.__version__,
        "ray_start_s": round(ray_start_s, 1),
        "quick": args.quick,
        "throughput": rows,
        "screen": screen,
    }
    print(
        f"\nThroughput: tier 1 (`llm` agent, `none`) on the stub, {1000 * LATENCY_S:.0f} ms per request, "
        f"{n_tasks} tasks\n"
    )
    print("| workers | local episodes/min | Ray episodes/min | Ray / local |")
    print("|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['workers']} | {row['local']['episodes_per_min']:,.0f} | {row['ray']['episodes_per_min']:,.0f} | "
            f"{row['ray_over_local']:.2f} |"
        )
    print(
        f"\nTier-0 screen of {screen['tasks']:,} tasks ({screen['strategy']}, 2 workers): local "
        f"{screen['local']['wall_s']} s, Ray {screen['ray']['wall_s']} s; identical per task: "
        f"{screen['identical_per_task']} ({len(screen['mismatched_tasks'])} differ)"
    )
    print(f"Ray local cluster start: {result['ray_start_s']} s")
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / ("cluster_quick.json" if args.quick else "cluster.json")
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    run_main(main, "bench_cluster")
