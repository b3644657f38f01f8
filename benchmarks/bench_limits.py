"""Limits: peak memory and wall time against suite size, tool-output size and episode length.

One command (`python benchmarks/bench_limits.py`, `--quick` for a smaller sweep) prints three tables and
writes `benchmarks/results/limits.json` (`limits_quick.json` with `--quick`). Every point runs in a
fresh subprocess, so its peak RSS (`VmHWM` of /proc/self/status) is its own; each child reports its RSS
after imports and set-up (`base`) and its peak, and times only the episodes.

1. **Suite size.** `BuiltinSuite(n_tasks=N)` for N = 100, 1,000, 5,000, all splits, the `reference`
   agent under `none` and `clear_tool_uses`, episodes written to a temporary run directory exactly as
   `acon run` writes them. Slope: least-squares MB of peak RSS (and seconds) per 1,000 tasks.
2. **Tool-output size.** A one-tool synthetic task whose single static result is 1 kB ... 1 MB, the
   needed literal at its tail: read it, answer with the literal.
3. **Episode length.** A synthetic task of 50, 100, 200 steps (one ~1 kB static page per step, the
   answer needs the first page's literal). The growth exponent is the log-log slope of wall time
   against steps: 1 is linear; 2 would be a per-step cost proportional to the history.

Deterministic strategies only, no model: the figures are the harness's own (history, checkpoints,
episode records, storage).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from optimizer.agent.loop import EpisodeServices, run_episode  # noqa: E402
from optimizer.context.strategies import parse_strategy  # noqa: E402
from optimizer.evaluate.codec import encode_episode  # noqa: E402
from optimizer.evaluate.runner import AgentSpec, run_tasks  # noqa: E402
from optimizer.evaluate.strategy_runs import summarize  # noqa: E402
from optimizer.interrupts import run_main  # noqa: E402
from optimizer.world import (  # noqa: E402
    CheckResult,
    Environment,
    Need,
    NeedKind,
    ReferenceStep,
    RetentionClass,
    Task,
    ToolCall,
    ToolOutput,
    ToolSpec,
    UserTurn,
)

RESULTS = ROOT / "benchmarks" / "results"
STRATEGIES = ("none", "clear_tool_uses")
SUITE_SIZES = (1000, 5000, 10000)
OUTPUT_BYTES = (1_000, 10_000, 100_000, 1_000_000)
EPISODE_STEPS = (50, 100, 200)
QUICK = {"suite": (50, 200, 400), "output": (1_000, 100_000, 1_000_000), "steps": (25, 50, 100)}
WORDS = (
    "order",
    "stock",
    "refund",
    "ledger",
    "ticket",
    "warehouse",
    "invoice",
    "carrier",
    "region",
    "batch",
    "status",
    "amount",
    "customer",
    "shipment",
    "quantity",
    "catalog",
)

# ------------------------------------------------------------------------------------- synthetic tasks

READ = ToolSpec(
    "read_page",
    "Read one page of the archive.",
    {"type": "object", "properties": {"page": {"type": "integer"}}, "required": ["page"]},
    retention_class=RetentionClass.STATIC,
)


def page_text(page: int, size: int) -> str:
    """About `size` bytes of archive text for `page`, its key on the last line."""
    lines, length, i = [], 0, 0
    while length < size:
        line = f"{page}.{i} " + " ".join(WORDS[(page * 7 + i * 3 + k) % len(WORDS)] for k in range(10))
        lines.append(line)
        length += len(line) + 1
        i += 1
    lines.append(f"KEY-{page}: K{page:05d}X")
    return "\n".join(lines)


class Archive(Environment):
    """Pages of static text; the answer must contain page 0's key."""

    def __init__(self, size: int) -> None:
        self.size = size

    def tools(self, turn: int) -> Sequence[ToolSpec]:
        return (READ,)

    def call(self, call: ToolCall, turn: int) -> ToolOutput:
        return ToolOutput(page_text(int(call.arguments.get("page", 0)), self.size))

    def check(self, answers: Sequence[str | None]) -> CheckResult:
        ok = "K00000X" in (answers[0] or "")
        return CheckResult(ok, () if ok else ("answer lacks page 0's key",))


def archive_task(pages: int, size: int) -> Task:
    """Read `pages` pages of `size` bytes, then answer with page 0's key (so it must stay visible)."""
    steps = [ReferenceStep(0, ToolCall(f"r{p}", "read_page", {"page": p})) for p in range(pages)]
    steps.append(ReferenceStep(0, answer="K00000X", needs=(Need(NeedKind.VALUE, "K00000X", guess="K00001X"),)))
    return Task(
        f"archive-{pages}x{size}",
        "limits",
        (UserTurn("Read the archive pages, then give page 0's key."),),
        lambda: Archive(size),
        reference=tuple(steps),
        max_steps_per_turn=pages + 5,
    )


# ------------------------------------------------------------------------------------- one measured point


def _status(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def measure(case: str, size: int, strategy: str) -> dict[str, Any]:
    """Run one point in this process (call it in a fresh one): base and peak RSS in MB, episode wall time."""
    strategy_ = parse_strategy(strategy)
    if case == "suite":
        from tasks.builtin import BuiltinSuite

        tasks = BuiltinSuite(n_tasks=size).load().tasks  # built on access, as `acon run` gets them
        base = _status("VmRSS")
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            episodes = run_tasks(
                tasks,
                strategy_,
                AgentSpec("reference"),
                endpoints=None,
                directory=Path(tmp) / "run",
                meta={"key": "limits"},
            )
            wall = time.perf_counter() - started
            summary = summarize(episodes)
            log_mb = (Path(tmp) / "run" / "episodes.jsonl").stat().st_size / 2**20
        out = {
            "tasks": len(tasks),
            "success": summary["success"],
            "steps": sum(e.metrics.steps for e in episodes.summaries),
            "episodes_mb": round(log_mb, 1),
        }
    else:
        task = archive_task(1, size) if case == "output" else archive_task(size, 1000)
        base = _status("VmRSS")
        started = time.perf_counter()
        episode = run_episode(
            task, AgentSpec("reference").build(task, None), strategy_, EpisodeServices(max_total_steps=size + 10)
        )
        wall = time.perf_counter() - started
        record = len(json.dumps(encode_episode(episode)))
        out = {
            "success": episode.success,
            "steps": episode.metrics.steps,
            "peak_tokens": episode.metrics.peak_tokens,
            "record_mb": round(record / 2**20, 2),
        }
    return {
        "case": case,
        "size": size,
        "strategy": strategy,
        "wall_s": round(wall, 3),
        "base_rss_mb": round(base, 1),
        "peak_rss_mb": round(_status("VmHWM"), 1),
        **out,
    }


def in_subprocess(case: str, size: int, strategy: str) -> dict[str, Any]:
    args = [sys.executable, str(Path(__file__).resolve()), "--point", case, str(size), strategy]
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{case} {size} {strategy} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------------- fits and tables


def slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope of y on x (nan with fewer than two points: that case was not measured)."""
    if len(set(xs)) < 2:
        return float("nan")
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def fits(points: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for strategy in STRATEGIES:
        suite = [p for p in points if p["case"] == "suite" and p["strategy"] == strategy]
        sizes = [p["size"] for p in suite]
        if len(suite) < 2:
            continue
        out[f"suite/{strategy}"] = {
            "peak_rss_mb_per_1000_tasks": round(1000 * slope(sizes, [p["peak_rss_mb"] for p in suite]), 1),
            "peak_rss_kb_per_task": round(1024 * slope(sizes, [p["peak_rss_mb"] for p in suite]), 2),
            "wall_s_per_1000_tasks": round(1000 * slope(sizes, [p["wall_s"] for p in suite]), 1),
        }
        output = [p for p in points if p["case"] == "output" and p["strategy"] == strategy]
        out[f"output/{strategy}"] = {
            "peak_rss_mb_per_mb_output": round(
                2**20 * slope([p["size"] for p in output], [p["peak_rss_mb"] for p in output]), 1
            ),
        }
        steps = [p for p in points if p["case"] == "steps" and p["strategy"] == strategy]
        out[f"steps/{strategy}"] = {
            "wall_growth_exponent": round(
                slope([math.log(p["size"]) for p in steps], [math.log(max(p["wall_s"], 1e-3)) for p in steps]), 2
            ),
            "peak_rss_mb_per_100_steps": round(
                100 * slope([p["size"] for p in steps], [p["peak_rss_mb"] for p in steps]), 1
            ),
        }
    return out


def table(points: list[dict[str, Any]], case: str, unit: str) -> str:
    rows = [p for p in points if p["case"] == case]
    head = f"| {unit:>9} | strategy        | wall s | base RSS MB | peak RSS MB | peak - base | ok   |"
    lines = [head, "|" + "|".join("-" * (len(c) + 0) for c in head.split("|")[1:-1]) + "|"]
    for p in rows:
        ok = p["success"] if isinstance(p["success"], bool) else f"{p['success']:.2f}"
        lines.append(
            f"| {p['size']:>9,} | {p['strategy']:<15} | {p['wall_s']:>6.2f} | {p['base_rss_mb']:>11.1f} | "
            f"{p['peak_rss_mb']:>11.1f} | {p['peak_rss_mb'] - p['base_rss_mb']:>11.1f} | {ok!s:<4} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Smaller sizes (a minute or two).")
    parser.add_argument(
        "--cases",
        default="suite,output,steps",
        help="Comma-separated cases to measure; the others keep their points from the last run's JSON.",
    )
    parser.add_argument("--strategies", default=",".join(STRATEGIES), help="Comma-separated strategies to measure.")
    parser.add_argument("--point", nargs=3, metavar=("CASE", "SIZE", "STRATEGY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.point:
        case, size, strategy = args.point
        print(json.dumps(measure(case, int(size), strategy)))
        return
    sizes = QUICK if args.quick else {"suite": SUITE_SIZES, "output": OUTPUT_BYTES, "steps": EPISODE_STEPS}
    cases = [c for c in args.cases.split(",") if c]
    strategies = [s for s in args.strategies.split(",") if s]
    path = RESULTS / ("limits_quick.json" if args.quick else "limits.json")
    # Points not measured now are kept from the previous run, each with the date it was measured.
    previous = json.loads(path.read_text()) if path.exists() else {"points": []}
    points = [
        {"measured": previous.get("measured"), **p}
        for p in previous["points"]
        if not (p["case"] in cases and p["strategy"] in strategies)
    ]
    for case in cases:
        for size in sizes[case]:
            for strategy in strategies:
                point = {
                    "measured": dt.datetime.now().isoformat(timespec="seconds"),
                    **in_subprocess(case, size, strategy),
                }
                points.append(point)
                print(
                    f"  {case} {size:,} {strategy}: {point['wall_s']:.2f} s, peak {point['peak_rss_mb']:.0f} MB",
                    file=sys.stderr,
                    flush=True,
                )
    order = {c: i for i, c in enumerate(("suite", "output", "steps"))}
    points.sort(key=lambda p: (order[p["case"]], p["size"], STRATEGIES.index(p["strategy"])))
    result = {
        "measured": dt.datetime.now().isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "quick": args.quick,
        "points": points,
        "fits": fits(points),
    }
    print("\nSuite size (built-in tasks, reference agent, episodes to a run directory)\n")
    print(table(points, "suite", "tasks"))
    print("\nTool-output size (one static result, bytes)\n")
    print(table(points, "output", "bytes"))
    print("\nEpisode length (one ~1 kB page per step)\n")
    print(table(points, "steps", "steps"))
    print("\nFits\n")
    for name, values in result["fits"].items():
        print(f"- {name}: " + ", ".join(f"{k} {v}" for k, v in values.items()))
    RESULTS.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    run_main(main, "bench_limits")
