"""Optimizer cost and search quality: ACON's protocol vs acon's tiered selection vs GEPA, same budget and seed.

    python benchmarks/bench_search.py [--config experiments/quickstart.toml] [--tier1-tasks 2]
        [--out benchmarks/results/search.json]

Three `acon optimize` jobs from the same config, seed, rounds and candidate count:
  acon-protocol  every candidate screened with full agent episodes (ACON's protocol: `screen_agent = "llm"`)
  acon-tiered    candidates screened with the reference agent, the best confirmed with the llm agent
  gepa           `search = "gepa"`, with as many tier-0 episodes as acon-tiered used for screening
Each job's chosen guideline is then evaluated on the same test tasks, tier 0 (all) and tier 1 (a few),
so quality is compared on equal terms. Prints one table, writes JSON.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from optimizer import _offline  # noqa: E402,F401
from optimizer.config import ExperimentConfig, load_experiment  # noqa: E402
from optimizer.context.strategies import GuidelineStrategy, parse_strategy  # noqa: E402
from optimizer.evaluate.endpoints import ModelEndpoints  # noqa: E402
from optimizer.evaluate.jobs import run_strategy, select_tasks  # noqa: E402
from optimizer.search.job import OptimizationJob  # noqa: E402
from optimizer.storage import JsonlLog  # noqa: E402


def variant(config: ExperimentConfig, name: str, work: Path, **optimize: Any) -> ExperimentConfig:
    return config.with_overrides(optimize=optimize, tracking={"enabled": False}).model_copy(
        update={"out": str(work / name), "name": f"{config.name}-{name}"}
    )


def episodes_in(job_dir: Path, pattern: str) -> int:
    return sum(len(JsonlLog(p).read()) for p in job_dir.glob(f"runs/{pattern}/episodes.jsonl"))


def job_seconds(job_dir: Path, last_written: Path) -> float:
    """A job's wall time from its own files: job.json is written first, `last_written` last."""
    return last_written.stat().st_mtime - (job_dir / "job.json").stat().st_mtime


def rounds_only(job_dir: Path) -> dict[str, Any] | None:
    """A job killed after its rounds but before its report, summarized from its own records."""
    state_path = job_dir / "state.json"
    if (job_dir / "report.json").exists() or not state_path.exists():
        return None
    state = json.loads(state_path.read_text())
    if not state.get("done"):
        return None
    agent_episodes = episodes_in(job_dir, "*-llm-train-*")
    return {
        "chosen": {"version": state["current"], "guideline": str(job_dir / "guidelines" / f"{state['current']}.md")},
        "budget": {"agent_episodes": agent_episodes, "compressor_calls": None,
                   "optimizer_tokens": state["optimizer_tokens"]},
        "partial": "rounds finished, final report not run; budget counted from its run directories",
        "seconds": job_seconds(job_dir, state_path),
    }


def tier0_screen_episodes(job_dir: Path) -> int:
    """Reference-agent episodes a job spent on the train split (its screening cost)."""
    return episodes_in(job_dir, "guideline-reference-train-*")


def run_job(config: ExperimentConfig) -> tuple[dict[str, Any], float]:
    started = time.time()
    resume = (config.out_dir / "job.json").exists()
    finished = config.out_dir / "report.json"
    if finished.exists():  # read back, not rerun
        return json.loads(finished.read_text()), job_seconds(config.out_dir, finished)
    job = OptimizationJob(config, resume=resume, log=lambda m: print(f"[{config.name}] {m}", file=sys.stderr))
    report = job.run()
    return report, time.time() - started


def evaluate(config: ExperimentConfig, guideline: str, tier1: int, endpoints: ModelEndpoints) -> dict[str, Any]:
    tasks = select_tasks(config, "test", config.optimize.test_limit)
    strategy = GuidelineStrategy(guideline=guideline)
    t0 = run_strategy(config, tasks, strategy, agent="reference", endpoints=endpoints, split="test",
                      base=config.out_dir / "bench")
    out = {"tier0": _scores(t0.summary)}
    if tier1:
        t1 = run_strategy(config, tasks[:tier1], strategy, agent="llm", endpoints=endpoints, split="test",
                          base=config.out_dir / "bench")
        out["tier1"] = _scores(t1.summary)
    return out


def _scores(s: dict[str, Any]) -> dict[str, Any]:
    return {k: s[k] for k in ("scored", "success", "success_ci", "peak_tokens_mean", "peak_tokens_max")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default=str(ROOT / "experiments" / "quickstart.toml"))
    parser.add_argument("--tier1-tasks", type=int, default=2)
    parser.add_argument("--searches", default="acon-tiered,acon-protocol,gepa",
                        help="Which jobs to run (a finished job is read back, not rerun).")
    parser.add_argument("--work", default=str(ROOT / "runs" / "bench_search"))
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "search.json"))
    args = parser.parse_args()
    base = load_experiment(args.config)
    work = Path(args.work)
    started = time.time()
    jobs: dict[str, ExperimentConfig] = {
        "acon-tiered": variant(base, "acon-tiered", work, screen_agent="reference"),
        "acon-protocol": variant(base, "acon-protocol", work, screen_agent="llm", confirm_top=0,
                                 max_agent_episodes=1000),
    }
    selected = args.searches.split(",")
    rows = []
    for name, config in jobs.items():
        if name in selected or name == "acon-tiered":  # GEPA's budget is the tiered job's screening
            report, seconds = run_job(config)
            rows.append({"search": name, "seconds": round(seconds), "report": report})
        elif partial := rounds_only(config.out_dir):
            rows.append({"search": name, "seconds": round(partial.pop("seconds")), "report": partial,
                         "partial": partial["partial"]})
    screened = tier0_screen_episodes(jobs["acon-tiered"].out_dir)
    jobs["gepa"] = variant(base, "gepa", work, search="gepa", gepa_metric_calls=max(screened, 1))
    if "gepa" in selected:
        report, seconds = run_job(jobs["gepa"])
        rows.append({"search": "gepa", "seconds": round(seconds), "report": report})

    from optimizer.llm.endpoint import EndpointConfig

    with ModelEndpoints({"agent": EndpointConfig(), "compressor": EndpointConfig()},
                        log=lambda m: print(m, file=sys.stderr)) as endpoints:
        for r in rows:
            config = jobs[r["search"]]
            r["chosen"] = r["report"]["chosen"]["version"]
            r["budget"] = r["report"]["budget"]
            r["tier0_train_episodes"] = tier0_screen_episodes(config.out_dir)
            r["test"] = evaluate(config, r["report"]["chosen"]["guideline"], args.tier1_tasks, endpoints)
        none_cfg = jobs["acon-tiered"]
        tasks = select_tasks(none_cfg, "test", none_cfg.optimize.test_limit)
        none0 = run_strategy(none_cfg, tasks, parse_strategy("none"), agent="reference", endpoints=None,
                             split="test", base=none_cfg.out_dir / "bench")
        none1 = run_strategy(none_cfg, tasks[: args.tier1_tasks], parse_strategy("none"), agent="llm",
                             endpoints=endpoints, split="test", base=none_cfg.out_dir / "bench")
    reference = {"none_tier0": _scores(none0.summary), "none_tier1": _scores(none1.summary)}
    for r in rows:
        del r["report"]
    meta = {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, {__import__('os').cpu_count()} cores",
            "command": " ".join(["python", *sys.argv]), "config": args.config, "wall_s": round(time.time() - started)}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": meta, "rows": rows, "baseline": reference}, indent=2))
    print(f"{'search':14} {'agent eps':>9} {'tier0 eps':>9} {'compr calls':>11} {'opt tokens':>10} {'minutes':>7} "
          f"{'test t0 success':>15} {'t0 peak':>8} {'test t1 success':>15}")
    for r in rows:
        t0, t1 = r["test"]["tier0"], r["test"].get("tier1")
        calls = r["budget"]["compressor_calls"]
        print(f"{r['search']:14} {r['budget']['agent_episodes']:>9} {r['tier0_train_episodes']:>9} "
              f"{'-' if calls is None else calls:>11} {r['budget']['optimizer_tokens']:>10} {r['seconds'] / 60:>7.1f} "
              f"{t0['success']:>15.2f} {t0['peak_tokens_mean']:>8.0f} {t1['success'] if t1 else float('nan'):>15.2f}")
    none0s, none1s = reference["none_tier0"], reference["none_tier1"]
    print(f"none: tier0 success {none0s['success']:.2f} peak {none0s['peak_tokens_mean']:.0f}; "
          f"tier1 success {none1s['success']:.2f}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
