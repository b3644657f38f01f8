"""What the LLM adds, and what each search reaches: the same `acon optimize` job with deterministic proposers
only, with the LLM proposers, and with GEPA, at equal budget (rounds, candidates, seed), side by side.

    python benchmarks/bench_search.py [--configs experiments/builtin.toml,experiments/bfcl_long_context.toml]
        [--variants deterministic,llm,gepa] [--out benchmarks/results/search.json]

Per job: wall time, candidates screened, optimizer tokens, the train front it reached, the guideline it chose
and that guideline's test-split row (from the job's own report, on the same test tasks as the baselines and
the oracle), and which of its parts the LLM wrote. A job that already finished in its directory is read back
(run it again with --fresh to redo it). Prints one table, writes JSON.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from optimizer import _offline  # noqa: E402,F401
from optimizer.config import ExperimentConfig, load_experiment  # noqa: E402
from optimizer.interrupts import exit_cleanly_on_sigterm  # noqa: E402
from optimizer.search.job import OptimizationJob  # noqa: E402

VARIANTS: dict[str, dict[str, Any]] = {
    "deterministic": {"llm_proposers": False},
    "llm": {"llm_proposers": True},
    "gepa": {"search": "gepa"},
}


def variant(config: ExperimentConfig, name: str, work: Path) -> ExperimentConfig:
    return config.with_overrides(optimize=VARIANTS[name], tracking={"enabled": False}).model_copy(
        update={"out": str(work / f"{config.name}-{name}"), "name": f"{config.name}-{name}"}
    )


def run(config: ExperimentConfig, fresh: bool) -> dict[str, Any]:
    out = config.out_dir
    if fresh and out.exists():
        shutil.rmtree(out)
    report_path = out / "report.json"
    if report_path.exists():
        report = json.loads(report_path.read_text())
        wall = report_path.stat().st_mtime - (out / "job.json").stat().st_mtime
    else:
        started = time.perf_counter()
        report = OptimizationJob(
            config,
            resume=(out / "state.json").exists(),
            log=lambda m: print(f"  {config.name}: {m}", file=sys.stderr, flush=True),
        ).run()
        wall = time.perf_counter() - started
    rows = {r["strategy"]: r for r in report["rows"] if r["tier"] == "reference"}
    chosen = rows["chosen"]
    best = rows.get(report["best_baseline"] or "")
    return {
        "job": config.name,
        "directory": str(out),
        "wall_s": round(wall, 1),
        "candidates": report["budget"]["candidates"],
        "optimizer_tokens": report["budget"]["optimizer_tokens"],
        "compressor_calls": report["budget"]["compressor_calls"],
        "front": report["pareto"],
        "chosen": report["chosen"],
        "test": {
            k: chosen[k]
            for k in (
                "tasks",
                "success",
                "success_ci",
                "peak_tokens_mean",
                "peak_tokens_ci",
                "peak_vs_none",
                "recall_calls",
                "success_without_recall",
            )
        },
        "none": {k: rows["none"][k] for k in ("success", "peak_tokens_mean")},
        "oracle": {k: rows["oracle"][k] for k in ("success", "peak_tokens_mean")} if "oracle" in rows else None,
        "best_baseline": {"name": report["best_baseline"], "peak_tokens_mean": best["peak_tokens_mean"]}
        if best
        else None,
        "paired_vs_best_baseline": report["paired"].get("best_baseline"),
        "llm_parts": report["llm_parts"],
        "parts": report["parts"],
        "deterministic": report["deterministic"],
        "stopped": report["stopped"],
        "acceptance": report["acceptance"]["pass"],
    }


def table(results: list[dict]) -> str:
    lines = [
        "| job | wall | candidates | optimizer tokens | test success | test peak | × none | × oracle | "
        "best baseline (peak) | LLM-written parts |",
        "|" + "---|" * 10,
    ]
    for r in results:
        test, oracle, best = r["test"], r["oracle"], r["best_baseline"]
        floor = f"{test['peak_tokens_mean'] / oracle['peak_tokens_mean']:.2f}" if oracle else "–"
        base = f"`{best['name']}` ({best['peak_tokens_mean']:,.0f})" if best else "–"
        lines.append(
            f"| {r['job']} | {r['wall_s'] / 60:.1f} min | {r['candidates']} | {r['optimizer_tokens']:,} | "
            f"{test['success']:.2f} | {test['peak_tokens_mean']:,.0f} | {test['peak_vs_none']:.2f} | {floor} | "
            f"{base} | {len(r['llm_parts'])} |"
        )
    return "\n".join(lines)


def main() -> None:
    exit_cleanly_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default="experiments/builtin.toml,experiments/bfcl_long_context.toml")
    parser.add_argument("--variants", default="deterministic,llm,gepa")
    parser.add_argument("--work", default=str(ROOT / "runs" / "bench_search"))
    parser.add_argument("--fresh", action="store_true", help="Redo jobs that already finished.")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "search.json"))
    args = parser.parse_args()
    results = []
    for path in args.configs.split(","):
        config = load_experiment(ROOT / path)
        for name in args.variants.split(","):
            results.append(run(variant(config, name, Path(args.work)), args.fresh))
            print(table(results[-1:]), file=sys.stderr, flush=True)
    print(table(results))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "date": time.strftime("%Y-%m-%d"),
                "machine": f"{platform.machine()}, {platform.python_version()}",
                "command": " ".join(sys.argv),
                "jobs": results,
            },
            indent=1,
        )
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
