"""The long-horizon suite with a real agent: tier-1 rows (the 1.5B local model) beside tier-0 rows, one run.

    python benchmarks/bench_reach_long.py [--split test] [--limit N] [--strategies none,...] [--seeds 1]
        [--tier1 none,...] [--temperature 0.0] [--concurrency 1] [--runs benchmarks/results/runs_reach_long]
        [--out benchmarks/results/reach_long.json]

Per strategy and split: tier-1 success with its Wilson interval (every seed an episode), mean peak tokens,
how much the context grows (last request over first), recalls, seconds per episode, tier-1 episodes per hour
of wall time (with `--concurrency 2` two episodes share the local server's two slots), success per family;
and the same strategy's tier-0 row (reference agent, with the config's recall: `reach_long.toml` fits it to
the 1.5B agent, which never recalled, so p = 0 there; the JSON says which) on the same tasks. The suite's premise
is the `none` row: at least 0.80 at tier 1, a mean peak of at least 3,000 tokens. Strategies are names
(`none`, `offload_preview`, ...) or guideline files. Episodes are stored under `--runs` and reused, so an
interrupted run resumes where it stopped; the JSON is rewritten after each strategy, keeping the rows an
earlier run of the same cells wrote (so `--tier1` can keep the costly real-agent rows to a few strategies
while every strategy's tier-0 row lands in the same table).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from optimizer import _offline  # noqa: E402,F401
from optimizer.agent.episode import Episode  # noqa: E402
from optimizer.config import ExperimentConfig, load_experiment  # noqa: E402
from optimizer.context.guideline import read_guideline  # noqa: E402
from optimizer.context.strategies import ContextStrategy, GuidelineStrategy, parse_strategy  # noqa: E402
from optimizer.evaluate.endpoints import ModelEndpoints  # noqa: E402
from optimizer.evaluate.strategy_runs import run_strategy, select_tasks  # noqa: E402
from optimizer.interrupts import run_main  # noqa: E402
from optimizer.stats import wilson_interval  # noqa: E402
from optimizer.world.task import Task  # noqa: E402

CONFIG = ROOT / "experiments" / "reach_long.toml"
# Inside the repository, not under runs/: a tier-1 episode costs minutes, so the real agent's episodes are
# committed (.gitignore leaves out the tier-0 ones, which take seconds) and a run stopped in one checkout
# resumes in the next. A stored episode is reused only for the same suite content, strategy version and tasks.
RUNS = ROOT / "benchmarks" / "results" / "runs_reach_long"


def strategy_of(name: str) -> ContextStrategy:
    if name.endswith(".md"):
        return GuidelineStrategy(guideline=read_guideline(ROOT / name))
    return parse_strategy(name)


def episodes_of(
    config: ExperimentConfig,
    tasks: Sequence[Task],
    strategy: ContextStrategy,
    agent: str,
    endpoints: ModelEndpoints | None,
    runs: Path,
    split: str,
    pace: dict[str, float] | None = None,
) -> list[Episode]:
    started = time.perf_counter()
    done = [0]

    def progress(episode: Episode) -> None:
        # An episode read back from an earlier run (under an older run key too) took longer than this call has
        # been running: it is reported but not counted as run now.
        if episode.wall_s <= time.perf_counter() - started + 1.0:
            done[0] += 1
        verdict = "pass" if episode.success else "FAIL"
        _log(
            f"  {agent} {strategy.label()} {episode.task_id}: {verdict}, "
            f"peak {episode.metrics.peak_tokens}, {episode.wall_s:.0f} s ({time.perf_counter() - started:.0f} s)"
        )

    result = run_strategy(
        config, tasks, strategy, agent=agent, endpoints=endpoints, split=split, base=runs, on_episode=progress
    )
    out = result.scored_episodes()
    if pace is not None:  # only episodes run now count: stored ones cost nothing and would inflate the rate
        pace["episodes_run"] = pace.get("episodes_run", 0) + done[0]
        pace["wall_s"] = pace.get("wall_s", 0.0) + (time.perf_counter() - started if done[0] else 0.0)
    return out


def first_of_each_family(tasks: Sequence[Task], count: int) -> list[Task]:
    """The first `count` tasks of each family, in suite order: a sample that covers every kind of need."""
    seen: dict[str, int] = {}
    out = []
    for task in tasks:
        family = task.meta["family"]
        seen[family] = seen.get(family, 0) + 1
        if seen[family] <= count:
            out.append(task)
    return out


def row(episodes: Sequence[Episode], tasks: Sequence[Task]) -> dict[str, Any]:
    family = {t.id: t.meta["family"] for t in tasks}
    passes = sum(e.success for e in episodes)
    growth = [e.steps[-1].input_tokens / e.steps[0].input_tokens for e in episodes if e.steps]
    by_family: dict[str, list[bool]] = {}
    for e in episodes:
        by_family.setdefault(family[e.task_id], []).append(e.success)
    return {
        "episodes": len(episodes),
        "success": passes / len(episodes),
        "success_ci": wilson_interval(passes, len(episodes)),
        "peak_mean": statistics.mean(e.metrics.peak_tokens for e in episodes),
        "peak_max": max(e.metrics.peak_tokens for e in episodes),
        "growth_mean": statistics.mean(growth) if growth else None,
        "steps_mean": statistics.mean(len(e.steps) for e in episodes),
        "recalls": sum(e.metrics.recall_calls for e in episodes),
        "seconds_per_episode": statistics.mean(e.wall_s for e in episodes),
        "by_family": {f: sum(v) / len(v) for f, v in sorted(by_family.items())},
        "failures": {e.task_id: e.reasons[:3] for e in episodes if not e.success},
    }


def throughput(pace: dict[str, float]) -> dict[str, Any]:
    """Tier-1 episodes per hour of wall time, counting only episodes this invocation ran (None if all stored)."""
    run, wall = int(pace.get("episodes_run", 0)), pace.get("wall_s", 0.0)
    return {"episodes_run": run, "episodes_per_hour": round(3600 * run / wall, 1) if run and wall else None}


def earlier_rows(out: Path, report: dict[str, Any]) -> dict[str, Any]:
    """Rows of an earlier run of the same cells (split, tasks, seeds, temperature), kept beside this run's.

    A strategy added later then lands in the same table as the rows measured before it, and a row rebuilt
    from stored episodes keeps the episodes-per-hour figure of the run that measured them.
    """
    if not out.is_file():
        return {}
    try:
        before = json.loads(out.read_text())
    except json.JSONDecodeError:
        return {}
    same = ("split", "tasks", "seeds", "temperature")
    if not isinstance(before, dict) or any(before.get(k) != report[k] for k in same):
        return {}
    rows = before.get("rows")
    return rows if isinstance(rows, dict) else {}


def tier1_row(
    episodes: Sequence[Episode], tasks: Sequence[Task], pace: dict[str, float], before: dict[str, Any] | None
) -> dict[str, Any]:
    rate = throughput(pace)
    measured = (before or {}).get("tier1") or {}
    if rate["episodes_run"] == 0 and measured.get("episodes_per_hour") is not None:
        rate = {"episodes_run": measured.get("episodes_run"), "episodes_per_hour": measured["episodes_per_hour"]}
    return {**row(episodes, tasks), **rate}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=("train", "test"), default="test")
    parser.add_argument("--limit", type=int, default=None, help="First N tasks of the split (all by default).")
    parser.add_argument("--per-family", type=int, default=None, help="First N tasks of each family in the split.")
    parser.add_argument("--families", default=None, help="Only these families (comma-separated).")
    parser.add_argument("--strategies", default="none")
    parser.add_argument(
        "--tier1", default=None, help="Of --strategies, those also run by the real agent (default: all of them)."
    )
    parser.add_argument("--seeds", type=int, default=1, help="Tier-1 episodes per task, each its own seed.")
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument(
        "--concurrency", type=int, default=1, help="Tier-1 episodes at once (the local server has two slots)."
    )
    parser.add_argument("--runs", type=Path, default=RUNS)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "reach_long.json")
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")
    if args.concurrency < 1:
        parser.error("--concurrency must be at least 1")
    config = load_experiment(CONFIG).with_overrides(tracking={"enabled": False}, run={"concurrency": args.concurrency})
    tasks = select_tasks(config, args.split, args.limit)
    if args.families:
        wanted = {f.strip() for f in args.families.split(",")}
        tasks = [t for t in tasks if t.meta["family"] in wanted]
    if args.per_family is not None:
        tasks = first_of_each_family(tasks, args.per_family)
    names = [n.strip() for n in args.strategies.split(",") if n.strip()]
    real = names if args.tier1 is None else [n.strip() for n in args.tier1.split(",") if n.strip()]
    if not set(real) <= set(names):
        parser.error("--tier1 names strategies that are not in --strategies")
    report: dict[str, Any] = {
        "benchmark": "reach_long",
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}",
        "agent_model": config.endpoints.agent.model,
        "compressor_model": config.endpoints.compressor.model,
        "split": args.split,
        "tasks": [t.id for t in tasks],
        "seeds": args.seeds,
        "temperature": args.temperature,
        "concurrency": args.concurrency,
        "tier0_recall": {"mode": config.run.recall, "probability": config.run.recall_probability},
        "rows": {},
    }
    earlier = earlier_rows(args.out, report)
    report["rows"] = dict(earlier)
    for name in names:
        strategy = strategy_of(name)
        compressor = {"compressor": config.endpoints.compressor} if strategy.uses_compressor else {}
        with ModelEndpoints(compressor, log=_log) as endpoints:
            tier0 = episodes_of(config, tasks, strategy, "reference", endpoints, args.runs, args.split)
        tier1: list[Episode] = []
        pace: dict[str, float] = {}
        for seed in range(1, args.seeds + 1) if name in real else ():
            agent = {**config.endpoints.agent.model_dump(mode="python"), "temperature": args.temperature}
            if args.seeds > 1:
                agent["seed"] = seed
            seeded = config.with_overrides(endpoints={"agent": agent})
            roles = {"agent": seeded.endpoints.agent, **compressor}
            with ModelEndpoints(roles, log=_log) as endpoints:
                tier1 += episodes_of(seeded, tasks, strategy, "llm", endpoints, args.runs, args.split, pace)
        report["rows"][name] = {
            "label": strategy.label(),
            "tier0": row(tier0, tasks),
            "tier1": tier1_row(tier1, tasks, pace, earlier.get(name)) if tier1 else None,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    print_report(report)
    return 0


def print_report(r: dict[str, Any]) -> None:
    print(
        f"\nreach_long, {r['split']} split, {len(r['tasks'])} tasks, agent {r['agent_model']}, "
        f"{r['seeds']} seed(s) at temperature {r['temperature']}, {r.get('concurrency', 1)} episode(s) at once"
    )
    recall = r.get("tier0_recall")
    if recall:
        print(f"tier 0: reference agent, recall {recall['mode']}, probability {recall['probability']}")
    print("| strategy | tier | success | 95 % CI | peak mean | growth | recalls | s / episode | per hour | by family |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, rows in r["rows"].items():
        for tier in ("tier1", "tier0"):
            x = rows[tier]
            if x is None:  # run at tier 0 only
                continue
            fam = ", ".join(f"{f} {v:.2f}" for f, v in x["by_family"].items())
            rate = x.get("episodes_per_hour")
            print(
                f"| {name} | {tier[-1]} | {x['success']:.2f} | [{x['success_ci'][0]:.2f}, {x['success_ci'][1]:.2f}] | "
                f"{x['peak_mean']:,.0f} | {x['growth_mean']:.1f} x | {x['recalls']} | {x['seconds_per_episode']:.0f} | "
                f"{'-' if rate is None else f'{rate:.0f}'} | {fam} |"
            )


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


if __name__ == "__main__":
    run_main(main, "bench_reach_long")
