"""Per-call `ContextRuntime.compact()` time against conversation length, one model-free guideline.

A user's agent hands the whole conversation to `compact()` before every request, so a per-call cost that
grows with the history makes a long conversation quadratic. One synthetic conversation of `--steps`
steps (each step one `read_page` call and its 1.7 kB static result, native tool calls) is fed to one
runtime, the conversation so far before every request. Reported, for the calls around 10, 100, 500, 1,000
and 2,000 steps (the 11 calls ending there; the first 10 calls at 10): the median wall time and the median
CPU time of the process per call, each also against the 10-step figure. The whole conversation is run
`--repeats` times (each a fresh runtime) and each figure is the median over the runs, each run's own
figures kept in the JSON. The machine is shared, so wall times move with other jobs' load; CPU time is
less sensitive to it, though not immune (another job's memory traffic slows this one's cache misses).

The default guideline is the learned BFCL one (write-time `offload`, then `clear` and `mask` every step):
it edits the history at every request and calls no model.

    .venv/bin/python benchmarks/bench_compact_scaling.py [--steps 2000] [--repeats 3] \
        [--json benchmarks/results/compact_scaling.json]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: this checkout's code, not an installed one
    sys.path.insert(0, str(ROOT))

from optimizer.interrupts import run_main  # noqa: E402
from optimizer.runtime import ContextRuntime  # noqa: E402

CHECKPOINTS = (10, 100, 500, 1000, 2000)
WINDOW = 11  # calls per checkpoint whose median is reported


def page(step: int) -> str:
    """A 1.7 kB page of distinct words, so a tokenizer cannot shortcut repeats, of 812 tokens at every step.

    The step is written with five digits: written as it is, a page grew from 651 tokens at 10 steps to 812
    from 1,000 steps on, so the later calls had more new text to tokenize and offload, not more history.
    """
    return f"Archive page {step:05d}, key K{step:05d}X.\n" + " ".join(f"w{step:05d}x{j}" for j in range(160))


def step_messages(step: int) -> list[dict[str, Any]]:
    call = {
        "id": f"call_{step}",
        "type": "function",
        "function": {"name": "read_page", "arguments": json.dumps({"page": step})},
    }
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"call_{step}", "content": page(step)},
    ]


def measure(guideline: str, steps: int) -> dict[str, Any]:
    runtime = ContextRuntime(ROOT / guideline, retention={"read_page": "static"})
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You read archive pages with read_page."},
        {"role": "user", "content": "Read every archive page, then give page 0's key."},
    ]
    wall: list[float] = []
    cpu: list[float] = []
    started = time.perf_counter()
    for step in range(steps):
        messages.extend(step_messages(step))
        before, before_cpu = time.perf_counter(), time.process_time()
        runtime.compact(messages)
        wall.append(time.perf_counter() - before)
        cpu.append(time.process_time() - before_cpu)
    total = time.perf_counter() - started
    points = []
    for at in (c for c in CHECKPOINTS if c <= steps):
        window = slice(max(0, at - WINDOW), at)
        points.append(
            {
                "steps": at,
                "ms_per_call": round(statistics.median(wall[window]) * 1000, 3),
                "cpu_ms_per_call": round(statistics.median(cpu[window]) * 1000, 3),
            }
        )
    return {
        "total_s": round(total, 2),
        "points": with_ratios(points),
        "cache_breaks": runtime.stats.cache_breaks,
        "compressions": runtime.stats.compressions,
    }


def with_ratios(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for point in points:
        point["vs_first"] = round(point["ms_per_call"] / points[0]["ms_per_call"], 2)
        point["cpu_vs_first"] = round(point["cpu_ms_per_call"] / points[0]["cpu_ms_per_call"], 2)
    return points


def repeated(guideline: str, steps: int, repeats: int) -> dict[str, Any]:
    """`measure` run `repeats` times; each figure the median over the runs."""
    runs = [measure(guideline, steps) for _ in range(repeats)]
    if len({(r["cache_breaks"], r["compressions"]) for r in runs}) != 1:
        raise SystemExit("the runs compressed differently: the runtime is not deterministic here")
    points = [
        {
            "steps": at["steps"],
            "ms_per_call": round(statistics.median(r["points"][i]["ms_per_call"] for r in runs), 3),
            "cpu_ms_per_call": round(statistics.median(r["points"][i]["cpu_ms_per_call"] for r in runs), 3),
        }
        for i, at in enumerate(runs[0]["points"])
    ]
    return {
        "guideline": guideline,
        "steps": steps,
        "repeats": repeats,
        "total_s": round(sum(r["total_s"] for r in runs), 2),
        "points": with_ratios(points),
        "cache_breaks": runs[0]["cache_breaks"],
        "compressions": runs[0]["compressions"],
        "runs": [r["points"] for r in runs],
    }


def table(result: dict[str, Any]) -> str:
    lines = ["| steps | wall ms per call | vs 10 steps | CPU ms per call | vs 10 steps |", "|---|---|---|---|---|"]
    lines += [
        f"| {p['steps']:,} | {p['ms_per_call']:.2f} | {p['vs_first']:.2f} | {p['cpu_ms_per_call']:.2f} | "
        f"{p['cpu_vs_first']:.2f} |"
        for p in result["points"]
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3, help="runs of the whole conversation (median of them)")
    parser.add_argument("--guideline", default="guidelines/learned/bfcl_long_context.md")
    parser.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "compact_scaling.json")
    args = parser.parse_args()
    result = repeated(args.guideline, args.steps, args.repeats)
    result["measured"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    result["machine"] = f"{platform.machine()}, Python {platform.python_version()}"
    print(
        f"{args.guideline}: {args.repeats} x {args.steps} steps in {result['total_s']} s, "
        f"{result['compressions']} compressions each"
    )
    print(table(result))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    run_main(main, "bench_compact_scaling")
