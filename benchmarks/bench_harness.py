"""Harness overhead: episodes per minute against a stub server, concurrency, and the real-model share.

One command (`python benchmarks/bench_harness.py`, add `--real` for the local-model part) prints three
tables and writes `benchmarks/results/harness.json` (and `harness_real.json` with `--real`):

1. **Throughput on a zero-latency stub.** The built-in suite, a fixed task set, under `none`,
   `clear_tool_uses` and the seed `guideline` (its compressor is the stub). Tier 0 runs the `reference`
   agent; tier 1 runs the `llm` agent against a stub that replays each task's reference calls as JSON
   actions, so tier-1 episodes have the reference's length. Reports episodes/min, harness time per step
   (Σ(wall − model) / Σ steps) and model-call time per step (HTTP round trip + client + stub).
2. **Concurrency.** Tier 1 under `none` at run concurrency 1, 2, 4, 8, on the stub with zero latency
   and with a fixed per-request latency: throughput, and the speed-up over concurrency 1.
3. **Real local model** (`--real`): a few small train-split tasks with the embedded model as the agent
   under `none`; the share of wall time outside model calls, Σ(wall_s − model_s) / Σ wall_s.

Absolute times on a shared machine are noisy; compare ratios within one run. Each stub figure is the
median of `--repeats` runs (all samples are kept in the JSON).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from optimizer.agent.episode import Episode  # noqa: E402
from optimizer.context.strategies import parse_strategy  # noqa: E402
from optimizer.context.strategies.base import ContextStrategy  # noqa: E402
from optimizer.evaluate.endpoints import ModelEndpoints  # noqa: E402
from optimizer.evaluate.runner import AgentSpec, run_key, run_tasks  # noqa: E402
from optimizer.interrupts import run_main  # noqa: E402
from optimizer.llm.endpoint import EndpointConfig  # noqa: E402
from optimizer.testing.scripted import scripted_models  # noqa: E402
from optimizer.testing.stub_server import StubServer  # noqa: E402
from optimizer.world.task import Task  # noqa: E402
from tasks.builtin import BuiltinSuite  # noqa: E402

SEED_GUIDELINE = ROOT / "guidelines" / "seed" / "seed.md"
RESULTS = ROOT / "benchmarks" / "results"
STRATEGIES = ("none", "clear_tool_uses", "guideline")


class ReplayResponder:
    """Answers agent requests with the task's reference solution, one call per request, then `finish`.

    The task is recognised by its instruction (the first user message); the position in the solution is
    counted per task, so it holds under any strategy (a summary that drops earlier actions included).
    Compressor prompts, DSPy prompts and the system-token probe go to `scripted_models`. Call `reset()`
    between runs of the same tasks.
    """

    def __init__(self, tasks: Sequence[Task]) -> None:
        self._tasks = {task.turns[0].content: task for task in tasks}
        self._cursor: dict[str, int] = {}
        self._lock = threading.Lock()

    def reset(self) -> None:
        with self._lock:
            self._cursor.clear()

    def __call__(self, request: dict[str, Any]) -> str:
        task = self._task_of(request.get("messages", []))
        if task is None:
            return scripted_models(request)
        with self._lock:
            index = self._cursor.get(task.id, 0)
            self._cursor[task.id] = index + 1
        steps = [s for s in task.reference if s.turn == 0]
        step = steps[index] if index < len(steps) else None
        if step is None or step.call is None:
            answer = step.answer if step is not None and step.answer is not None else "done"
            return json.dumps({"tool": "finish", "arguments": {"answer": answer}})
        return json.dumps({"tool": step.call.name, "arguments": dict(step.call.arguments)})

    def _task_of(self, messages: Sequence[dict[str, Any]]) -> Task | None:
        if len(messages) < 2 or messages[0].get("role") != "system" or messages[1].get("role") != "user":
            return None
        if "compress the working context" in str(messages[0].get("content", "")):
            return None
        first = str(messages[1].get("content") or "")
        task = self._tasks.get(first)
        if task is not None:
            return task
        # Consecutive user messages are merged: the instruction may be followed by a summary or a result.
        return next((t for text, t in self._tasks.items() if first.startswith(text + "\n")), None)


@dataclass
class Measurement:
    """One `run_tasks` call, timed end to end (wall clock, and CPU time of this whole process)."""

    elapsed_s: float
    cpu_s: float
    episodes: list[Episode]

    @property
    def steps(self) -> int:
        return sum(len(e.steps) for e in self.episodes)

    def row(self) -> dict[str, Any]:
        wall = sum(e.metrics.wall_s for e in self.episodes)
        model = sum(e.metrics.model_s for e in self.episodes)
        compressor = sum(r.latency_s or 0.0 for e in self.episodes for r in e.records)
        steps = max(1, self.steps)
        return {
            "episodes": len(self.episodes),
            "steps": self.steps,
            "successes": sum(e.success for e in self.episodes),
            "infra_errors": sum(e.outcome == "infra_error" for e in self.episodes),
            "elapsed_s": self.elapsed_s,
            "episodes_per_min": 60.0 * len(self.episodes) / self.elapsed_s,
            "harness_ms_per_step": 1000.0 * (wall - model) / steps,
            "cpu_ms_per_step": 1000.0 * self.cpu_s / steps,
            "model_ms_per_step": 1000.0 * model / steps,
            "compression_ms_per_step": 1000.0 * compressor / steps,
            "compressor_calls": sum(e.metrics.compressor_calls for e in self.episodes),
            "compressor_cache_hits": sum(e.metrics.compressor_cache_hits for e in self.episodes),
        }


def strategy(name: str) -> ContextStrategy:
    if name == "guideline":
        return parse_strategy({"type": "guideline", "guideline": str(SEED_GUIDELINE)})
    return parse_strategy(name)


def measure(
    tasks: Sequence[Task],
    strat: ContextStrategy,
    agent: str,
    endpoints: ModelEndpoints | None,
    *,
    concurrency: int = 1,
    workdir: Path,
) -> Measurement:
    """Run `tasks` once into a fresh directory (no episode is reused) and time the whole call."""
    key = run_key("bench_harness", [t.id for t in tasks], strat.model_dump(mode="json"), agent, concurrency)
    directory = Path(tempfile.mkdtemp(prefix=f"{strat.type}-{agent}-c{concurrency}-", dir=workdir))
    started, cpu = time.perf_counter(), time.process_time()
    episodes = run_tasks(
        tasks,
        strat,
        AgentSpec(agent),
        endpoints=endpoints,
        directory=directory,
        meta={"key": key},
        concurrency=concurrency,
    )
    return Measurement(time.perf_counter() - started, time.process_time() - cpu, episodes)


def median_row(samples: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The sample with the median throughput (a real sample, so its fields agree with each other)."""
    ordered = sorted(samples, key=lambda r: r["episodes_per_min"])
    return {**ordered[(len(ordered) - 1) // 2], "samples_episodes_per_min": [r["episodes_per_min"] for r in samples]}


@contextlib.contextmanager
def stub_endpoints(
    responder: ReplayResponder, *, latency_s: float, concurrency: int, roles: Sequence[str] = ("agent", "compressor")
) -> Iterator[ModelEndpoints]:
    """Every role on one stub; the reply cache in a throwaway `ACON_HOME`, so every compressor call is cold."""
    previous = os.environ.get("ACON_HOME")
    with tempfile.TemporaryDirectory(prefix="acon-home-") as home, StubServer(responder, latency_s=latency_s) as url:
        os.environ["ACON_HOME"] = home
        config = EndpointConfig(base_url=url, model="stub", concurrency=concurrency, backoff_s=0.0)
        try:
            with ModelEndpoints(dict.fromkeys(roles, config), log=lambda _: None) as endpoints:
                yield endpoints
        finally:
            if previous is None:
                os.environ.pop("ACON_HOME", None)
            else:
                os.environ["ACON_HOME"] = previous


def bench_throughput(
    tasks: Sequence[Task], *, repeats: int, workdir: Path, log: Callable[[str], None]
) -> list[dict[str, Any]]:
    rows = []
    for tier, agent in ((0, "reference"), (1, "llm")):
        for name in STRATEGIES:
            samples = []
            for _ in range(repeats):
                # A fresh stub and reply cache per run, so no compressor call is answered from the cache.
                with stub_endpoints(ReplayResponder(tasks), latency_s=0.0, concurrency=1) as endpoints:
                    samples.append(measure(tasks, strategy(name), agent, endpoints, workdir=workdir).row())
            row = {"tier": tier, "agent": agent, "strategy": name, **median_row(samples)}
            log(f"  tier {tier} {name:<16} {row['episodes_per_min']:8.0f} episodes/min")
            rows.append(row)
    return rows


def bench_concurrency(
    tasks: Sequence[Task],
    *,
    levels: Sequence[int],
    latencies_s: Sequence[float],
    repeats: int,
    workdir: Path,
    log: Callable[[str], None],
) -> list[dict[str, Any]]:
    rows = []
    responder = ReplayResponder(tasks)
    for latency in latencies_s:
        base = None
        with stub_endpoints(responder, latency_s=latency, concurrency=max(levels), roles=("agent",)) as endpoints:
            for level in levels:
                samples = []
                for _ in range(repeats):
                    responder.reset()
                    samples.append(
                        measure(tasks, strategy("none"), "llm", endpoints, concurrency=level, workdir=workdir).row()
                    )
                row = {"latency_ms": 1000.0 * latency, "concurrency": level, **median_row(samples)}
                base = base or row["episodes_per_min"]
                row["speedup"] = row["episodes_per_min"] / base
                log(
                    f"  latency {row['latency_ms']:4.0f} ms  concurrency {level}  {row['episodes_per_min']:8.0f} "
                    f"episodes/min  x{row['speedup']:.2f}"
                )
                rows.append(row)
    return rows


def real_tasks(n_tasks: int) -> list[Task]:
    return BuiltinSuite(max_output_tokens=1300).load().split("train")[:n_tasks]


def bench_real(
    n_tasks: int, *, workdir: Path, log: Callable[[str], None], config: EndpointConfig | None = None
) -> dict[str, Any]:
    """Tier 1 on the embedded local model (`EndpointConfig()` unless `config`), `none`, small train-split tasks."""
    config = config or EndpointConfig()
    tasks = real_tasks(n_tasks)
    timers = {"probe": 0.0, "endpoint": 0.0}

    def timed(name: str, call: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                timers[name] += time.perf_counter() - started

        return wrapper

    with ModelEndpoints({"agent": config}, log=log) as endpoints:
        client = endpoints.client("agent")
        # The system-token probe is a model call outside any agent step. `model_s` sums each step's
        # latency, which is the successful attempt's only: the time inside `complete` (every attempt,
        # backoff, the probe) is timed here too, so time lost to a timed-out attempt is not called harness.
        client.system_tokens = timed("probe", client.system_tokens)  # type: ignore[method-assign]
        client.complete = timed("endpoint", client.complete)  # type: ignore[method-assign]
        run = measure(tasks, strategy("none"), "llm", endpoints, workdir=workdir)
    probe_s, endpoint_s = timers["probe"], timers["endpoint"]
    episodes = []
    for e in run.episodes:
        tools = sum(c.latency_s or 0.0 for c in e.tool_calls)
        episodes.append(
            {
                "task_id": e.task_id,
                "outcome": e.outcome,
                "steps": len(e.steps),
                "wall_s": e.metrics.wall_s,
                "model_s": e.metrics.model_s,
                "tool_s": tools,
                "outside_s": e.metrics.wall_s - e.metrics.model_s,
                "retries": e.metrics.retries,
                "attempts": [s.attempts for s in e.steps],
                "error": e.error,
            }
        )
    wall = sum(e["wall_s"] for e in episodes)
    outside = sum(e["outside_s"] for e in episodes)
    steps = max(1, sum(e["steps"] for e in episodes))
    return {
        "model": config.model,
        "suite": "builtin(max_output_tokens=1300), train split",
        "episodes": episodes,
        "wall_s": wall,
        "model_s": sum(e["model_s"] for e in episodes),
        "outside_s": outside,
        "outside_share": outside / wall if wall else 0.0,
        "system_probe_s": probe_s,
        "outside_share_without_probe": (outside - probe_s) / wall if wall else 0.0,
        "tool_s": sum(e["tool_s"] for e in episodes),
        "outside_ms_per_step": 1000.0 * outside / steps,
        "outside_ms_per_step_without_probe": 1000.0 * (outside - probe_s) / steps,
        "endpoint_s": endpoint_s,
        "outside_endpoint_s": wall - endpoint_s,
        "outside_endpoint_share": (wall - endpoint_s) / wall if wall else 0.0,
        "retries": sum(e["retries"] for e in episodes),
        # CPU time of this process (harness, client, tools; the model server is another process) over wall.
        "process_cpu_s": run.cpu_s,
        "process_cpu_share": run.cpu_s / run.elapsed_s,
        "elapsed_s": run.elapsed_s,
    }


def machine() -> dict[str, Any]:
    model = platform.processor()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "cpu": model,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "system": platform.platform(),
        "load_avg_at_start": list(os.getloadavg()),
    }


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |"
    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = ["| " + " | ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in cells]
    return "\n".join([line, rule, *body])


def throughput_table(rows: Sequence[dict[str, Any]]) -> str:
    return table(
        [
            "tier",
            "strategy",
            "episodes/min",
            "steps",
            "ok",
            "harness ms/step",
            "model ms/step",
            "compression ms/step",
            "compressor calls",
            "CPU ms/step",
        ],
        [
            [
                r["tier"],
                r["strategy"],
                f"{r['episodes_per_min']:.0f}",
                r["steps"],
                f"{r['successes']}/{r['episodes']}",
                f"{r['harness_ms_per_step']:.1f}",
                f"{r['model_ms_per_step']:.1f}",
                f"{r['compression_ms_per_step']:.1f}",
                r["compressor_calls"],
                f"{r['cpu_ms_per_step']:.1f}",
            ]
            for r in rows
        ],
    )


def concurrency_table(rows: Sequence[dict[str, Any]]) -> str:
    return table(
        [
            "stub latency",
            "concurrency",
            "episodes/min",
            "speed-up",
            "harness ms/step",
            "model ms/step",
            "CPU ms/step",
            "ok",
        ],
        [
            [
                f"{r['latency_ms']:.0f} ms",
                r["concurrency"],
                f"{r['episodes_per_min']:.0f}",
                f"{r['speedup']:.2f}",
                f"{r['harness_ms_per_step']:.1f}",
                f"{r['model_ms_per_step']:.1f}",
                f"{r['cpu_ms_per_step']:.1f}",
                f"{r['successes']}/{r['episodes']}",
            ]
            for r in rows
        ],
    )


def real_table(real: dict[str, Any]) -> str:
    rows = [
        [
            e["task_id"],
            e["outcome"],
            e["steps"],
            e["retries"],
            f"{e['wall_s']:.1f}",
            f"{e['model_s']:.1f}",
            f"{e['outside_s']:.2f}",
            f"{100 * e['outside_s'] / e['wall_s']:.1f} %",
        ]
        for e in real["episodes"]
    ]
    rows.append(
        [
            "all",
            "",
            sum(e["steps"] for e in real["episodes"]),
            real["retries"],
            f"{real['wall_s']:.1f}",
            f"{real['model_s']:.1f}",
            f"{real['outside_s']:.2f}",
            f"{100 * real['outside_share']:.1f} %",
        ]
    )
    return table(["task", "outcome", "steps", "retries", "wall s", "model s", "outside s", "outside share"], rows)


def run_benchmark(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the parts `argv` asks for, print their tables, write their JSON, and return what it wrote."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=32, help="builtin tasks for the stub parts (seed 0)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per stub figure; the median is reported")
    parser.add_argument("--concurrency", default="1,2,4,8", help="run concurrency levels, comma-separated")
    parser.add_argument("--latency-ms", type=float, default=50.0, help="fixed stub latency for the second sweep")
    parser.add_argument("--real", action="store_true", help="also run the real local-model part (needs the model)")
    parser.add_argument("--real-tasks", type=int, default=3, help="train-split tasks for --real")
    parser.add_argument("--no-stub", action="store_true", help="skip the stub parts (with --real)")
    parser.add_argument("--out", type=Path, default=RESULTS / "harness.json")
    args = parser.parse_args(argv)

    command = "python benchmarks/bench_harness.py " + " ".join(argv if argv is not None else sys.argv[1:])
    header = {
        "command": command.strip(),
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
    }
    result: dict[str, Any] = {**header}

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="bench-harness-") as tmp:
        workdir = Path(tmp)
        if not args.no_stub:
            tasks = BuiltinSuite(n_tasks=args.tasks).load().tasks
            levels = [int(x) for x in args.concurrency.split(",") if x]
            result["params"] = {
                "suite": f"builtin(n_tasks={args.tasks}), all tasks",
                "tasks": len(tasks),
                "repeats": args.repeats,
                "concurrency": levels,
                "latency_ms": args.latency_ms,
            }
            log("throughput (zero-latency stub)")
            result["throughput"] = bench_throughput(tasks, repeats=args.repeats, workdir=workdir, log=log)
            log("concurrency (tier 1, none)")
            result["concurrency"] = bench_concurrency(
                tasks,
                levels=levels,
                latencies_s=(0.0, args.latency_ms / 1000.0),
                repeats=args.repeats,
                workdir=workdir,
                log=log,
            )
            print(f"\nThroughput, {len(tasks)} builtin tasks, zero-latency stub (median of {args.repeats})\n")
            print(throughput_table(result["throughput"]))
            print(f"\nConcurrency, tier 1 (llm agent replaying references), none (median of {args.repeats})\n")
            print(concurrency_table(result["concurrency"]))
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(result, indent=2) + "\n")
        if args.real:
            log("real local model (tier 1, none)")
            real = {**header, **bench_real(args.real_tasks, workdir=workdir, log=log)}
            print(f"\nReal local model ({real['model']}), {len(real['episodes'])} tasks, none\n")
            print(real_table(real))
            print(
                f"\noutside model calls (Σ(wall_s - model_s) / Σ wall_s): {100 * real['outside_share']:.2f} % "
                f"({100 * real['outside_share_without_probe']:.2f} % without the system-token probe, "
                f"{real['system_probe_s']:.1f} s); outside every endpoint call (all attempts, the probe): "
                f"{100 * real['outside_endpoint_share']:.2f} %; this process was on CPU "
                f"{100 * real['process_cpu_share']:.3f} % of the run ({real['process_cpu_s']:.2f} s)"
            )
            real_out = args.out.with_name(args.out.stem + "_real.json")
            real_out.parent.mkdir(parents=True, exist_ok=True)
            real_out.write_text(json.dumps(real, indent=2) + "\n")
            result["real"] = real
    return result


def main(argv: Sequence[str] | None = None) -> None:
    run_benchmark(argv)


if __name__ == "__main__":
    run_main(main, "bench_harness")
