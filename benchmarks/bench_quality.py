"""Compression quality on the test splits: every baseline, the oracle (the floor), the seed and the learned
guidelines, tier 0, on the same tasks; under the honest reference agent and, beside it, the old agent that
peeked into the recall store and one that never recalls.

    python benchmarks/bench_quality.py [--suites bfcl_long_context,builtin,bfcl_base]
        [--learned bfcl_long_context=guidelines/learned/bfcl_long_context.md,builtin=guidelines/learned/builtin.md]
        [--recall honest,peek,never] [--llm-tasks 8] [--batch-tokens 500,2000]
        [--out benchmarks/results/quality.json]

Model-free strategies run on every test task (they cost CPU only). A strategy that calls the compressor (the
seed; a learned guideline with an LLM move) runs on the first `--llm-tasks` test tasks whose full context
stays under 4k tokens, since one compressor call on a 20k-token output takes minutes on this machine; its
row says so, and its paired comparison is over those tasks (`--llm-tasks 0`: no LLM rows at all). Prints one
table per suite, writes JSON and a
success-vs-peak plot.

Capacity and money are reported apart: peak and tokens sent per episode (what compression saves in the
window), and the bill projected from each episode's requests under every price model of the suite's
`[cost]` section (what it saves in money, once prompt caching is counted), with cache breaks per episode.
Where ranking by peak and ranking by projected cost per success disagree, a section lists the pairs and why.
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
from optimizer.context.guideline import Guideline, read_guideline  # noqa: E402
from optimizer.context.strategies import DETERMINISTIC, GuidelineStrategy, parse_strategy  # noqa: E402
from optimizer.evaluate.endpoints import ModelEndpoints  # noqa: E402
from optimizer.evaluate.scores import Scores  # noqa: E402
from optimizer.evaluate.strategy_runs import select_tasks  # noqa: E402
from optimizer.interrupts import run_main  # noqa: E402
from optimizer.search.evaluator import Evaluator  # noqa: E402
from optimizer.search.report import Row, best_baseline, paired  # noqa: E402

CONFIGS = {
    "builtin": "experiments/builtin.toml",
    "bfcl_long_context": "experiments/bfcl_long_context.toml",
    "bfcl_base": "experiments/bfcl_base.toml",
}
AFFORDABLE_TOKENS = 4000


def configured(name: str, recall: str, runs: Path) -> ExperimentConfig:
    config = load_experiment(ROOT / CONFIGS[name])
    return config.with_overrides(run={"recall": recall}, tracking={"enabled": False}).model_copy(
        update={"out": str(runs / name)}
    )


def suite_rows(
    name: str, learned: list[str], recalls: list[str], llm_tasks: int, runs: Path, batches: tuple[int, ...] = ()
) -> list[dict]:
    out = []
    base = configured(name, "honest", runs)
    tasks = select_tasks(base, "test", None)
    seed = read_guideline(base.guideline)
    strategies: list[tuple[str, str, Any]] = [("none", "control", parse_strategy("none"))]
    strategies += [(n, "baseline", parse_strategy(n)) for n in DETERMINISTIC if n != "none"]
    strategies += [("oracle", "oracle", parse_strategy("oracle")), ("seed", "seed", GuidelineStrategy(guideline=seed))]
    strategies += [
        (f"learned ({Path(p).stem})", "learned", GuidelineStrategy(guideline=read_guideline(p))) for p in learned
    ]
    strategies += [
        (f"learned ({Path(p).stem}), batch {n}", "learned", GuidelineStrategy(guideline=batched(read_guideline(p), n)))
        for p in learned
        for n in batches
    ]
    # `--llm-tasks 0` runs no compressing row, so no model server is started for them.
    needs_model = llm_tasks > 0 and any(s.uses_compressor for _, _, s in strategies)
    roles = {"compressor": base.endpoints.compressor} if needs_model else {}
    with ModelEndpoints(roles, log=lambda m: print(m, file=sys.stderr)) as endpoints:
        for recall in recalls:
            config = configured(name, recall, runs)
            evaluator = Evaluator(config, endpoints, runs / name / "runs")
            none = evaluator.evaluate(parse_strategy("none"), tasks, "test", "reference").scores
            small = [t for t in tasks if none.by_task()[t.id].peak_tokens <= AFFORDABLE_TOKENS][:llm_tasks]
            rows: list[Row] = []
            for label, kind, strategy in strategies:
                if strategy.uses_compressor and (recall != "honest" or llm_tasks == 0):
                    continue  # the LLM rows cost minutes per call: once, with the honest agent (0: never)
                subset = small if strategy.uses_compressor else tasks
                started = time.perf_counter()
                scores = evaluator.evaluate(strategy, subset, "test", "reference").scores
                rows.append(Row(label, kind, "reference", scores, strategy.version()))
                print(
                    f"  {name} {recall} {label}: {scores.success:.2f}, peak {scores.peak_mean:,.0f} "
                    f"({time.perf_counter() - started:.0f} s)",
                    file=sys.stderr,
                    flush=True,
                )
            out += [_row(name, recall, r, rows, none, base.cost.primary) for r in rows]
    return out


def batched(guideline: Guideline, tokens: int) -> Guideline:
    """The same guideline with the policy's batching knob set (history moves wait until `tokens` go at once)."""
    return guideline.model_copy(update={"policy": guideline.policy.model_copy(update={"batch_tokens": tokens})})


def _row(suite: str, recall: str, row: Row, rows: list[Row], none: Scores, primary: str | None) -> dict[str, Any]:
    s = row.scores
    on = [t.task_id for t in s.tasks]
    none_on = none.on(on)
    oracle = next((r.scores.on(on) for r in rows if r.kind == "oracle"), None)
    full = [r for r in rows if r.scores.n == none.n]
    best = best_baseline(full, Row("none", "control", "reference", none), tolerance=0.0)
    out = {
        "suite": suite,
        "recall": recall,
        "strategy": row.name,
        "kind": row.kind,
        "version": row.version,
        **s.headline(),
        "recalls_per_task": s.recalls / s.n if s.n else 0.0,
        "peak_vs_none": s.peak_mean / none_on.peak_mean if none_on.peak_mean else None,
        "peak_vs_oracle": s.peak_mean / oracle.peak_mean if oracle and oracle.peak_mean else None,
        "none_success_on_these": none_on.success,
        "task_ids": on,
    }
    if best is not None and row.kind in ("learned", "seed"):
        out["vs_best_baseline"] = {"baseline": best.name, **paired(s, best.scores).to_dict()}
    out.update(_money(s, none, primary))
    return out


def _money(s: Scores, none: Scores, primary: str | None) -> dict[str, Any]:
    """Tokens sent, cache breaks and projected cost per success per price model, each beside `none`'s.

    A row on a subset of the tasks (an LLM row) compares with `none` on those tasks under the headline
    price model only, since per-task bills are kept for that one."""
    projected = s.summary.get("projected", {})
    none_projected = none.summary.get("projected", {})
    same_tasks = s.n == none.n
    scored = s.summary.get("scored") or s.n

    def per_episode(bills: dict[str, Any], episodes: int) -> float | None:
        if primary not in bills or not episodes:
            return None
        bill = bills[primary]
        return (bill["input_tokens"] + bill["cached_tokens"] + bill["cache_write_tokens"]) / episodes

    tokens, none_tokens = per_episode(projected, scored), per_episode(none_projected, none.summary.get("scored", 0))
    cost: dict[str, float | None] = {}
    versus: dict[str, float | None] = {}
    cached: dict[str, float | None] = {}
    for name, bill in projected.items():
        cost[name] = bill["cost_per_success"]
        prompt = bill["input_tokens"] + bill["cached_tokens"] + bill["cache_write_tokens"]
        cached[name] = bill["cached_tokens"] / prompt if prompt else None
        theirs = none_projected.get(name, {}).get("cost_per_success") if same_tasks else None
        if not same_tasks and name == primary:
            theirs = none.on([t.task_id for t in s.tasks]).projected_cost_per_success
        versus[name] = cost[name] / theirs if cost[name] is not None and theirs else None
    return {
        "tokens_per_episode": tokens,
        "tokens_vs_none": tokens / none_tokens if tokens is not None and none_tokens and same_tasks else None,
        "cache_breaks_per_episode": s.summary.get("cache_breaks_per_episode"),
        "cost_per_success_by_model": cost,
        "cost_vs_none_by_model": versus,
        "cached_share_by_model": cached,
    }


def disagreements(rows: list[dict]) -> list[dict[str, Any]]:
    """Pairs of strategies (same suite, honest recall, same tasks) where the lower peak costs more per success."""
    out = []
    groups: dict[tuple[str, int], list[dict]] = {}
    for r in rows:
        if r["recall"] == "honest":
            groups.setdefault((r["suite"], r["tasks"]), []).append(r)
    for (suite, _), group in groups.items():
        models = sorted({m for r in group for m in r["cost_per_success_by_model"]})
        for model in models:
            priced = [r for r in group if r["cost_per_success_by_model"].get(model) is not None]
            for a in priced:
                for b in priced:
                    cost_a, cost_b = a["cost_per_success_by_model"][model], b["cost_per_success_by_model"][model]
                    if a["peak_tokens_mean"] < b["peak_tokens_mean"] and cost_a > cost_b:
                        out.append(
                            {
                                "suite": suite,
                                "model": model,
                                "lower_peak": a["strategy"],
                                "cheaper": b["strategy"],
                                "why": _why(a, b, model),
                            }
                        )
    return out


def _why(a: dict, b: dict, model: str) -> str:
    """What makes `a` (the lower peak) cost more than `b`: rebuilt prefixes, fewer successes, more tokens."""
    reasons = []
    breaks_a, breaks_b = a["cache_breaks_per_episode"] or 0.0, b["cache_breaks_per_episode"] or 0.0
    share_a, share_b = a["cached_share_by_model"].get(model), b["cached_share_by_model"].get(model)
    if breaks_a > breaks_b or (share_a is not None and share_b is not None and share_a < share_b):
        cached = (
            f", {share_a:.0%} vs {share_b:.0%} of input cached" if share_a is not None and share_b is not None else ""
        )
        reasons.append(f"it rebuilds the cached prefix more ({breaks_a:.2f} vs {breaks_b:.2f} breaks/episode{cached})")
    if a["success"] < b["success"]:
        reasons.append(f"it solves fewer ({a['success']:.2f} vs {b['success']:.2f}), so each success carries more")
    tokens_a, tokens_b = a.get("tokens_per_episode"), b.get("tokens_per_episode")
    if tokens_a is not None and tokens_b is not None and tokens_a > tokens_b:
        reasons.append(f"it sends more tokens in all ({tokens_a:,.0f} vs {tokens_b:,.0f} per episode)")
    return "; ".join(reasons) or "output and compressor tokens"


def disagreement_lines(found: list[dict[str, Any]]) -> list[str]:
    if not found:
        return ["Ranking by peak and by projected cost per success agree everywhere."]
    return [
        f"- {d['suite']}, {d['model']}: `{d['lower_peak']}` has the lower peak but costs more per success than "
        f"`{d['cheaper']}`: {d['why']}."
        for d in found
    ]


def table(rows: list[dict]) -> str:
    models = list(dict.fromkeys(m for r in rows for m in r["cost_per_success_by_model"]))
    head = (
        "| suite | recall | strategy | tasks | success | 95 % CI | recalls/task | never recalls | peak mean | "
        "peak 95 % CI | × none | × oracle | vs best baseline (paired peak) | tokens/episode (× none) | "
        "breaks/episode | " + " | ".join(f"$/success {m} (× none)" for m in models) + " |"
    )
    lines = [head, "|" + "---|" * (15 + len(models))]
    for r in rows:
        low, high = r["success_ci"]
        plow, phigh = r["peak_tokens_ci"]
        versus = r.get("vs_best_baseline")
        cell = "–"
        if versus and versus.get("tasks"):
            a, b = versus["peak_diff_ci"]
            cell = f"{versus['peak_diff']:+,.0f} [{a:+,.0f}, {b:+,.0f}] vs `{versus['baseline']}`"
        ratio = f"{r['peak_vs_none']:.2f}" if r["peak_vs_none"] is not None else "–"
        floor = f"{r['peak_vs_oracle']:.2f}" if r["peak_vs_oracle"] is not None else "–"
        lines.append(
            f"| {r['suite']} | {r['recall']} | {r['strategy']} | {r['tasks']} | {r['success']:.2f} | "
            f"[{low:.2f}, {high:.2f}] | {r['recalls_per_task']:.2f} | {r['success_without_recall']:.2f} | "
            f"{r['peak_tokens_mean']:,.0f} | [{plow:,.0f}, {phigh:,.0f}] | {ratio} | {floor} | {cell} | "
            f"{_times(r['tokens_per_episode'], r['tokens_vs_none'], ',.0f')} | "
            f"{r['cache_breaks_per_episode'] or 0:.2f} | "
            + " | ".join(
                _times(r["cost_per_success_by_model"].get(m), r["cost_vs_none_by_model"].get(m), ".4f") for m in models
            )
            + " |"
        )
    return "\n".join(lines)


def _times(value: float | None, ratio: float | None, spec: str) -> str:
    if value is None:
        return "–"
    return f"{value:{spec}}" + (f" ({ratio:.2f})" if ratio is not None else "")


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    suites = sorted({r["suite"] for r in rows})
    fig, axes = plt.subplots(1, len(suites), figsize=(6 * len(suites), 4.5), squeeze=False)
    for ax, suite in zip(axes[0], suites, strict=True):
        for r in rows:
            if (
                r["suite"] != suite
                or r["recall"] != "honest"
                or r["tasks"] < max(x["tasks"] for x in rows if x["suite"] == suite)
            ):
                continue
            marker = {"oracle": "*", "learned": "D", "control": "s"}.get(r["kind"], "o")
            ax.scatter(r["peak_tokens_mean"], r["success"], marker=marker, s=70)
            ax.annotate(
                r["strategy"],
                (r["peak_tokens_mean"], r["success"]),
                fontsize=7,
                xytext=(4, 3),
                textcoords="offset points",
            )
        ax.set_title(f"{suite} (test, tier 0, honest recall)")
        ax.set_xlabel("mean peak tokens")
        ax.set_ylabel("success")
        ax.set_xscale("log")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", default="bfcl_long_context,builtin,bfcl_base")
    parser.add_argument("--learned", default="", help="suite=path[,suite=path]: learned guidelines per suite")
    parser.add_argument("--recall", default="honest,peek,never")
    parser.add_argument("--llm-tasks", type=int, default=8)
    parser.add_argument(
        "--batch-tokens",
        default="",
        help="n[,n]: also run each learned guideline with the policy's `batch_tokens` set to each n",
    )
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "quality.json"))
    parser.add_argument("--runs", default=str(ROOT / "runs" / "bench_quality"))
    args = parser.parse_args()
    learned: dict[str, list[str]] = {}
    for item in filter(None, args.learned.split(",")):
        suite, _, path = item.partition("=")
        learned.setdefault(suite, []).append(path)
    started = time.perf_counter()
    rows = []
    for suite in args.suites.split(","):
        batches = tuple(int(n) for n in filter(None, args.batch_tokens.split(",")))
        rows += suite_rows(
            suite, learned.get(suite, []), args.recall.split(","), args.llm_tasks, Path(args.runs), batches
        )
    found = disagreements(rows)
    print(table(rows))
    print("\nWhere the peak and the cost rankings disagree:")
    print("\n".join(disagreement_lines(found)))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "date": time.strftime("%Y-%m-%d"),
                "machine": f"{platform.machine()}, {platform.python_version()}",
                "command": " ".join(sys.argv),
                "wall_s": round(time.perf_counter() - started, 1),
                "rows": rows,
                "disagreements": found,
            },
            indent=1,
        )
    )
    plot(rows, out.with_suffix(".png"))
    print(f"wrote {out} and {out.with_suffix('.png')}")


if __name__ == "__main__":
    run_main(main, "bench_quality")
