"""Compression quality: every strategy on the same tasks, tier 0 everywhere, tier 1 on a subset.

    python benchmarks/bench_quality.py [--suites builtin,bfcl_long_context,bfcl_base] [--learned PATH]
        [--llm-tasks 8 | builtin=8,bfcl_long_context=4] [--tier1-tasks 4] [--out benchmarks/results/quality.json]

Deterministic strategies run with the reference agent on every test task (they cost nothing but CPU).
The LLM strategies (`llm_history`, `llm_observation` and the seed guideline through ACON's compressors,
plus the learned guideline) run on the first `--llm-tasks` test tasks whose largest tool output fits the
local compressor comfortably and exceeds the observation threshold, since each compressor call on the
local 1.5B model costs tens of seconds. Tier 1 (the local model as agent) runs `none`, the seed and the
learned guideline on `--tier1-tasks` of those. Costs use the price table below (gpt-4.1-mini list prices,
per million tokens) so that cache-aware and uncached cost can be compared; the local model itself is free.
Prints one table per suite and tier, writes JSON and a success-vs-peak plot per suite.
"""

from __future__ import annotations

import argparse
import contextlib
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
from optimizer.evaluate.jobs import RunResult, run_strategy, select_tasks  # noqa: E402
from optimizer.llm.endpoint import EndpointConfig  # noqa: E402
from optimizer.llm.usage import Pricing  # noqa: E402

PRICING = Pricing(input_per_mtok=0.40, cached_input_per_mtok=0.10, output_per_mtok=1.60)
DETERMINISTIC = ("none", "fifo", "mask_last_n", "clear_tool_uses", "offload_preview")
CONFIGS = {
    "builtin": "experiments/builtin.toml",
    "bfcl_long_context": "experiments/bfcl_long_context.toml",
    "bfcl_base": "experiments/bfcl_base.toml",
}


def priced(config: ExperimentConfig, out: Path) -> ExperimentConfig:
    endpoints = config.endpoints.model_dump(mode="json")
    for role in endpoints.values():
        role["pricing"] = PRICING.model_dump()
    return config.with_overrides(endpoints=endpoints, tracking={"enabled": False}).model_copy(
        update={"out": str(out)}
    )


def row(suite: str, tier: str, result: RunResult) -> dict[str, Any]:
    s = result.summary
    episodes = [e for e in result.episodes if e.outcome != "infra_error"]
    return {
        "suite": suite, "tier": tier, "strategy": result.strategy.label(), "tasks": s["scored"],
        "success": s["success"], "success_ci": s["success_ci"], "peak_tokens_mean": s["peak_tokens_mean"],
        "peak_tokens_max": s["peak_tokens_max"], "dependency_mean": s["dependency_mean"],
        "total_tokens": s["total_tokens"], "agent_tokens": s["agent_tokens"],
        "compressor_tokens": s["compressor_tokens"], "compressor_calls": s["compressor_calls"],
        "cost_per_success": s["cost_per_success"], "cost_per_success_uncached": s["cost_per_success_uncached"],
        "cache_breaks": s["cache_breaks"], "invalidated_tokens": sum(e.metrics["invalidated_tokens"] for e in episodes),
        "recall_calls": s["recall_calls"], "infra_errors": s["infra_errors"], "wall_s": s["wall_s"],
        "task_ids": [e.task_id for e in result.episodes],
    }


def llm_subset(none: RunResult, threshold: int, limit: int, ceiling: int = 4000) -> list[str]:
    """Tasks where compression has something to do but the local compressor is not swamped."""
    chosen = []
    for episode in none.episodes:
        sizes = [c["result_tokens"] for c in episode.tool_calls]
        if sizes and threshold < max(sizes) <= ceiling:
            chosen.append(episode.task_id)
    return chosen[:limit]


def per_suite(spec: str, suite: str) -> int:
    """`8` for every suite, or `builtin=8,bfcl_long_context=4` (unlisted suites: 0)."""
    if "=" not in spec:
        return int(spec)
    limits = dict(part.split("=", 1) for part in spec.split(","))
    return int(limits.get(suite, 0))


def bench_suite(name: str, args: argparse.Namespace, endpoints: ModelEndpoints | None) -> list[dict[str, Any]]:
    config = priced(load_experiment(ROOT / CONFIGS[name]), Path(args.work) / name)
    tasks = select_tasks(config, "test", None)
    rows = []
    results: dict[str, RunResult] = {}
    for strategy in DETERMINISTIC:
        results[strategy] = run_strategy(config, tasks, parse_strategy(strategy), agent="reference",
                                         endpoints=None, split="test")
        rows.append(row(name, "tier0", results[strategy]))
        print(f"[{name}] tier0 {strategy}: done", file=sys.stderr)
    seed = GuidelineStrategy(guideline=str(ROOT / "guidelines/seed/seed.md"))
    llm_ids = set(llm_subset(results["none"], seed.spec.policy.t_obs, per_suite(args.llm_tasks, name)))
    subset = [t for t in tasks if t.id in llm_ids]
    if not subset or endpoints is None:
        return rows
    llm = {
        "none": parse_strategy("none"),
        "llm_history": parse_strategy({"type": "llm_history", "guideline": str(seed.guideline)}),
        "llm_observation": parse_strategy({"type": "llm_observation", "guideline": str(seed.guideline)}),
        "seed": seed,
    }
    if args.learned:
        llm["learned"] = GuidelineStrategy(guideline=str(Path(args.learned).resolve()))
    for label, strategy in llm.items():
        result = run_strategy(config, subset, strategy, agent="reference", endpoints=endpoints, split="test")
        rows.append({**row(name, "tier0-llm-subset", result), "label": label})
        print(f"[{name}] tier0 subset {label}: done", file=sys.stderr)
    tier1_tasks = per_suite(args.tier1_tasks, name)
    if tier1_tasks:
        for label in args.tier1_strategies.split(","):
            strategy = llm.get(label) or parse_strategy(label)
            if label == "learned" and not args.learned:
                continue
            result = run_strategy(config, subset[:tier1_tasks], strategy, agent="llm", endpoints=endpoints,
                                  split="test")
            rows.append({**row(name, "tier1", result), "label": label})
            print(f"[{name}] tier1 {label}: done", file=sys.stderr)
    return rows


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = sorted({(r["suite"], r["tier"]) for r in rows})
    fig, axes = plt.subplots(1, len(groups), figsize=(5 * len(groups), 4), squeeze=False)
    for ax, (suite, tier) in zip(axes[0], groups, strict=True):
        for r in (r for r in rows if (r["suite"], r["tier"]) == (suite, tier)):
            low, high = r["success_ci"]
            ax.errorbar(r["peak_tokens_mean"], r["success"], yerr=[[r["success"] - low], [high - r["success"]]],
                        fmt="o", capsize=3)
            ax.annotate(r.get("label", r["strategy"]).split("@")[0], (r["peak_tokens_mean"], r["success"]),
                        fontsize=7, xytext=(3, 3), textcoords="offset points")
        ax.set_title(f"{suite} · {tier}")
        ax.set_xlabel("peak tokens (mean)")
        ax.set_ylabel("success")
        ax.set_ylim(-0.05, 1.05)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def print_table(rows: list[dict[str, Any]]) -> None:
    header = (f"{'suite':18} {'tier':17} {'strategy':34} {'n':>4} {'success':>7} {'95% CI':>13} {'peak':>7} "
              f"{'max':>7} {'dep':>10} {'tokens':>9} {'cost/succ':>10} {'uncached':>9} {'breaks':>6}")
    print(header)
    for r in rows:
        low, high = r["success_ci"]
        cost = r["cost_per_success"]
        uncached = r["cost_per_success_uncached"]
        print(f"{r['suite']:18} {r['tier']:17} {r.get('label', r['strategy'])[:34]:34} {r['tasks']:>4} "
              f"{r['success']:>7.2f} [{low:.2f}, {high:.2f}] {r['peak_tokens_mean']:>7.0f} {r['peak_tokens_max']:>7} "
              f"{r['dependency_mean']:>10.0f} {r['total_tokens']:>9} "
              f"{'-' if cost is None else f'{cost:.5f}':>10} {'-' if uncached is None else f'{uncached:.5f}':>9} "
              f"{r['cache_breaks']:>6}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suites", default="builtin,bfcl_long_context,bfcl_base")
    parser.add_argument("--learned", help="Learned guideline (.md) to include.")
    parser.add_argument("--llm-tasks", default="8", help="Per suite: `8`, or `builtin=8,bfcl_long_context=4`.")
    parser.add_argument("--tier1-tasks", default="4", help="Per suite, like --llm-tasks.")
    parser.add_argument("--tier1-strategies", default="none,seed,learned,fifo")
    parser.add_argument("--work", default=str(ROOT / "runs" / "bench_quality"))
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "quality.json"))
    args = parser.parse_args()
    started = time.time()
    needs_model = any(per_suite(args.llm_tasks, suite) > 0 for suite in args.suites.split(","))
    local = EndpointConfig(pricing=PRICING)  # the embedded default, priced at the table above
    context = (
        ModelEndpoints({"agent": local, "compressor": local}, log=lambda m: print(m, file=sys.stderr))
        if needs_model else contextlib.nullcontext()
    )
    rows: list[dict[str, Any]] = []
    with context as endpoints:
        for suite in args.suites.split(","):
            rows += bench_suite(suite, args, endpoints)
            print_table([r for r in rows if r["suite"] == suite])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}",
            "cores": __import__("os").cpu_count(), "wall_s": round(time.time() - started, 1),
            "command": " ".join(["python", *sys.argv]), "pricing_per_mtok": PRICING.model_dump()}
    out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    plot(rows, out.with_suffix(".png"))
    print_table(rows)
    print(f"wrote {out} and {out.with_suffix('.png')} in {meta['wall_s']} s")


if __name__ == "__main__":
    main()
