"""The final report: the chosen guideline against `none`, the seed and the baselines on the test split."""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Any

from optimizer.context.strategies import GuidelineStrategy, parse_strategy
from optimizer.evaluate.jobs import RunResult
from optimizer.evaluate.store import EpisodeStore, latest_per_task

if TYPE_CHECKING:
    from optimizer.search.job import OptimizationJob

ROW_KEYS = ("tasks", "success", "success_ci", "peak_tokens_mean", "peak_tokens_max", "dependency_mean",
            "total_tokens", "compressor_tokens", "cost_per_success", "cost_per_success_uncached", "blocking",
            "duplicate_writes", "recall_calls", "cache_breaks", "infra_errors")


def row(name: str, tier: str, result: RunResult) -> dict[str, Any]:
    s = result.summary
    out = {"strategy": name, "tier": tier, **{k: s[k] for k in ROW_KEYS if k != "tasks"}, "tasks": s["scored"]}
    out["directory"] = str(result.directory)
    return out


def build_report(job: OptimizationJob) -> dict[str, Any]:
    chosen = job.chosen()
    seed = job.seed()
    tier0 = job.options.screen_agent
    job.log(f"final: test split ({len(job.test)} tasks), chosen {chosen.guideline.name}@{chosen.version}")
    runs: dict[str, RunResult] = {}
    runs["chosen"] = job.evaluate(GuidelineStrategy(guideline=chosen.guideline), job.test, "test", tier0)
    runs["seed"] = job.evaluate(GuidelineStrategy(guideline=seed.guideline), job.test, "test", tier0)
    for name in dict.fromkeys(("none", *job.options.final_strategies)):
        runs[name] = job.evaluate(parse_strategy(name), job.test, "test", tier0)
    tier1: dict[str, RunResult] = {}
    if job.options.final_llm_limit > 0:
        subset = job.test[: job.options.final_llm_limit]
        tier1["chosen"] = job.evaluate(GuidelineStrategy(guideline=chosen.guideline), subset, "test", "llm")
        tier1["seed"] = job.evaluate(GuidelineStrategy(guideline=seed.guideline), subset, "test", "llm")
        tier1["none"] = job.evaluate(parse_strategy("none"), subset, "test", "llm")

    chosen_row = row("chosen", tier0, runs["chosen"])
    chosen_row["guideline"] = str(job.dir.path / "guidelines" / f"{chosen.version}.md")
    chosen_row["version"] = chosen.version
    baselines = [{**row(name, tier0, result), "both_solved": both_solved(runs["chosen"], result)}
                 for name, result in runs.items() if name != "chosen"]
    baselines += [row(f"{name}", "llm", result) for name, result in tier1.items() if name != "chosen"]
    report = {
        "experiment": job.config.name,
        "suite": job.config.suite.type,
        "chosen": chosen_row,
        "chosen_tier1": row("chosen", "llm", tier1["chosen"]) if "chosen" in tier1 else None,
        "baselines": baselines,
        "rounds": [
            {"round": r["round"], "candidates": len(r["candidates"]), "pairs": r["pairs"], "pareto": r["pareto"],
             "chosen": r["chosen"], "rejected": r["rejected"], "improved": r["improved"]}
            for r in job.state.rounds
        ],
        "stopped": job.state.stopped,
        "budget": job.budget().to_dict(),
        "infrastructure": infrastructure(job),
        "acceptance": acceptance(job, runs, tier1),
        "pareto": [p.to_dict() for p in job.front()],
        "points": [p.to_dict() for p in job.points()],
    }
    job.dir.write_json("report.json", report)
    job.dir.write_text("report.md", report_markdown(report))
    if job.tracker is not None:
        job.tracker.on_report(job, report)
    return report


def both_solved(chosen: RunResult, other: RunResult) -> dict[str, Any]:
    """Mean peak tokens of both strategies over the tasks both of them solved.

    A failed episode often ends early, before its largest context, so a strategy that breaks tasks
    can show a lower mean peak than one that solves them; on the tasks both solved, the peaks compare
    like for like.
    """
    solved = {e.task_id: e.metrics["peak_tokens"] for e in chosen.episodes if e.success}
    pairs = [(solved[e.task_id], e.metrics["peak_tokens"]) for e in other.episodes
             if e.success and e.task_id in solved]
    if not pairs:
        return {"tasks": 0, "chosen_peak_mean": None, "peak_mean": None}
    return {"tasks": len(pairs), "chosen_peak_mean": sum(c for c, _ in pairs) / len(pairs),
            "peak_mean": sum(o for _, o in pairs) / len(pairs)}


def both_solved_cell(row: dict[str, Any]) -> str:
    paired = row.get("both_solved")
    if not paired:
        return "–"
    if not paired["tasks"]:
        return "no task"
    return f"{paired['chosen_peak_mean']:,.0f} vs {paired['peak_mean']:,.0f} ({paired['tasks']})"


def infrastructure(job: OptimizationJob) -> dict[str, Any]:
    """Model faults over the whole job, from every episode record in its run directories.

    Retried calls are counted over all records, superseded ones included (those calls were made). An
    episode whose calls failed after their retries is an infrastructure error: excluded from every score
    and from pair mining, and run again when its run directory is evaluated again (`redone_episodes`);
    `excluded_episodes` are the ones still standing in the final records.
    """
    retried = retries = malformed = excluded = redone = 0
    kinds: Counter[str] = Counter()
    for run in job.run_dirs():
        records = EpisodeStore(run).records()
        latest = latest_per_task(records)
        redone += len(records) - len(latest)
        excluded += sum(1 for r in latest if r["outcome"] == "infra_error")
        for record in records:
            metrics = record.get("metrics") or {}
            retried += metrics.get("retried_calls", 0)
            retries += metrics.get("retries", 0)
            malformed += sum(1 for s in record.get("steps", []) if s["action"].get("malformed"))
            if record["outcome"] == "infra_error":
                kinds[str(record.get("error") or "unknown").split(":", 1)[0]] += 1
    failed = 0
    for path in sorted(job.dir.path.glob("rounds/*/*.json")):
        if path.name in ("diagnoses.json", "ut_proposals.json", "co_proposals.json"):
            failed += sum(1 for item in _json_list(path) if isinstance(item, dict) and item.get("error"))
    return {
        "retried_calls": retried, "retries": retries, "excluded_episodes": excluded, "redone_episodes": redone,
        "errors_by_kind": dict(sorted(kinds.items())), "malformed_agent_replies": malformed,
        "failed_optimizer_calls": failed,
    }


def _json_list(path) -> list[Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return []
    return data if isinstance(data, list) else []


def acceptance(job: OptimizationJob, runs: dict[str, RunResult], tier1: dict[str, RunResult]) -> dict[str, Any]:
    bars = job.config.acceptance
    out: dict[str, Any] = {"declared": bars.model_dump(), "tiers": {}}
    for tier, results in (("tier0", runs), ("tier1", tier1)):
        if "chosen" not in results:
            continue
        none, chosen = results["none"].summary, results["chosen"].summary
        drop = none["success"] - chosen["success"]
        reduction = 1 - chosen["peak_tokens_mean"] / none["peak_tokens_mean"] if none["peak_tokens_mean"] else 0.0
        checks = {
            "success_drop": {"value": drop, "bar": bars.max_success_drop, "pass": drop <= bars.max_success_drop},
            "peak_reduction": {"value": reduction, "bar": bars.min_peak_reduction,
                               "pass": reduction >= bars.min_peak_reduction},
            "blocking": {"value": chosen["blocking"], "bar": bars.max_blocking,
                         "pass": chosen["blocking"] <= bars.max_blocking},
        }
        out["tiers"][tier] = {"suite": job.config.suite.type, "checks": checks,
                              "pass": all(c["pass"] for c in checks.values())}
    out["pass"] = all(t["pass"] for t in out["tiers"].values())
    return out


def report_markdown(report: dict[str, Any]) -> str:
    lines = [f"# acon optimize: {report['experiment']}", "",
             f"Suite `{report['suite']}`, test split. Chosen guideline: `{report['chosen']['guideline']}`.", "",
             "| strategy | tier | tasks | success | 95% CI | peak mean | peak max | dependency | tokens | compressor "
             "| blocking | peak, both solved (chosen vs this) |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    rows = [report["chosen"], *([report["chosen_tier1"]] if report["chosen_tier1"] else []), *report["baselines"]]
    for r in rows:
        low, high = r["success_ci"]
        lines.append(
            f"| {r['strategy']} | {r['tier']} | {r['tasks']} | {r['success']:.2f} | [{low:.2f}, {high:.2f}] | "
            f"{r['peak_tokens_mean']:.0f} | {r['peak_tokens_max']} | {r['dependency_mean']:.0f} | "
            f"{r['total_tokens']} | "
            f"{r['compressor_tokens']} | {r['blocking']} | {both_solved_cell(r)} |"
        )
    lines += ["", "## Rounds", "", "| round | pairs | candidates | improved | chosen |", "|---|---|---|---|---|"]
    for r in report["rounds"]:
        lines.append(f"| {r['round']} | {r['pairs']} | {r['candidates']} | {r['improved']} | {r['chosen']} |")
    lines += ["", f"Stopped: {report['stopped']}.", "", "## Pareto front (train, screening tier)", "",
              "| label | success | peak mean |", "|---|---|---|"]
    for p in report["pareto"]:
        lines.append(f"| {p['label']} | {p['success']:.2f} | {p['peak_tokens']:.0f} |")
    b = report["budget"]
    lines += ["", "## Budget", "", f"- agent (tier-1) episodes: {b['agent_episodes']}",
              f"- compressor calls (uncached): {b['compressor_calls']}", f"- optimizer tokens: {b['optimizer_tokens']}"]
    infra = report.get("infrastructure")
    if infra is not None:
        lines += ["", "## Infrastructure", "",
                  f"- model calls retried: {infra['retried_calls']} ({infra['retries']} extra attempts)",
                  f"- episodes excluded as infrastructure errors: {infra['excluded_episodes']} "
                  f"(plus {infra['redone_episodes']} that were run again)",
                  f"- malformed agent replies (the agent was asked again): {infra['malformed_agent_replies']}",
                  f"- optimizer calls that failed (recorded as failed diagnoses or proposals): "
                  f"{infra['failed_optimizer_calls']}"]
        if infra["errors_by_kind"]:
            lines.append("- infrastructure errors by kind: "
                         + ", ".join(f"{k} {n}" for k, n in infra["errors_by_kind"].items()))
    lines += ["", "## Acceptance (declared before the run)", ""]
    for tier, verdict in report["acceptance"]["tiers"].items():
        lines.append(f"- {tier} ({verdict['suite']}): {'PASS' if verdict['pass'] else 'FAIL'}")
        for name, check in verdict["checks"].items():
            lines.append(f"  - {name}: {check['value']:.3f} (bar {check['bar']}) {'pass' if check['pass'] else 'fail'}")
    return "\n".join(lines) + "\n"
