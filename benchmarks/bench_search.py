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
from optimizer.interrupts import run_main  # noqa: E402
from optimizer.report.file import read_report  # noqa: E402
from optimizer.report.model import ReportRow  # noqa: E402
from optimizer.search.job import OptimizationJob  # noqa: E402
from optimizer.search.searches import AconSearch  # noqa: E402

VARIANTS: dict[str, dict[str, Any]] = {
    "deterministic": {"acon": {"llm_proposers": False}},
    "llm": {"acon": {"llm_proposers": True}},
    # GEPA reads none of `[optimize.acon]`, and a config that sets a search's section it does not run is refused.
    "gepa": {"search": "gepa", "acon": AconSearch().model_dump()},
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
        report = read_report(report_path)
        wall = report_path.stat().st_mtime - (out / "job.json").stat().st_mtime
    else:
        started = time.perf_counter()
        report = OptimizationJob(
            config,
            resume=(out / "state.json").exists(),
            log=lambda m: print(f"  {config.name}: {m}", file=sys.stderr, flush=True),
        ).run()
        wall = time.perf_counter() - started
    chosen, none = report.row("chosen"), report.row("none")
    if chosen is None or none is None:
        raise SystemExit(f"{report_path}: the report has no tier-0 row for the chosen guideline or `none`")
    oracle = report.row("oracle")
    best = report.row(report.best_baseline) if report.best_baseline else None
    budget = report.budget
    return {
        "job": config.name,
        "directory": str(out),
        "wall_s": round(wall, 1),
        "candidates": budget.candidates if budget else 0,
        "optimizer_tokens": budget.optimizer_tokens if budget else 0,
        "compressor_calls": budget.compressor_calls if budget else 0,
        "front": [p.to_dict() for p in report.pareto],
        "chosen": report.chosen.to_dict(),
        "test": {
            "tasks": chosen.figures.tasks,
            "success": chosen.figures.success,
            "success_ci": list(chosen.figures.success_ci),
            "peak_tokens_mean": chosen.figures.peak_tokens_mean,
            "peak_tokens_ci": list(chosen.figures.peak_tokens_ci),
            "peak_vs_none": chosen.peak_vs_none,
            "recall_calls": chosen.figures.recall_calls,
            "success_without_recall": chosen.figures.success_without_recall,
        },
        "none": _headline(none),
        "oracle": _headline(oracle) if oracle else None,
        "best_baseline": {"name": best.strategy, "peak_tokens_mean": best.figures.peak_tokens_mean} if best else None,
        "paired_vs_best_baseline": p.to_dict() if (p := report.paired.get("best_baseline")) else None,
        "llm_parts": [p.to_dict() for p in report.llm_parts],
        "parts": [p.to_dict() for p in report.parts],
        "deterministic": report.deterministic.to_dict() if report.deterministic else None,
        "stopped": report.stopped,
        "acceptance": report.acceptance.passed,
    }


def _headline(row: ReportRow) -> dict[str, float]:
    return {"success": row.figures.success, "peak_tokens_mean": row.figures.peak_tokens_mean}


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
    run_main(main, "bench_search")
