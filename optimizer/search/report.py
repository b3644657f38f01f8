"""The final report: a pure function of what the job measured.

Every row is one strategy on the same test tasks: the chosen guideline, the seed, full context, every
baseline and the oracle (the floor). Comparisons against `none` and against the best baseline are
paired over tasks, with bootstrap intervals on the differences. The report also says which parts of the
chosen guideline came from the LLM, what the deterministic proposers alone reached, how much success
rests on recalls, and what tier 0 does not track.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from optimizer.evaluate.stats import paired_bootstrap_diff
from optimizer.search.lineage import Part
from optimizer.search.scores import Scores

if TYPE_CHECKING:
    from optimizer.config import AcceptanceConfig

# What the reference agent (tier 0) does not model; every report repeats it next to tier-0 figures.
TIER0_LIMITS = (
    "whether a model notices a fact that is present but buried (position and length effects)",
    "whether a model reads a summary correctly, or acts on a paraphrase of a rule",
    "whether a model would recall a cleared result: the reference agent recalls whenever a placeholder "
    "names the call the missing fact came from (the `never recalls` column is the other extreme)",
    "values the task's reference does not mark as needed (literals the agent can take from the user's "
    "words or from a tool's schema are never needs)",
    "tool calls outside the reference solution (exploration, retries a model would make)",
)


@dataclass(frozen=True)
class Row:
    name: str
    kind: str  # learned | seed | control | baseline | oracle | deterministic
    tier: str  # reference | llm
    scores: Scores
    version: str | None = None


@dataclass(frozen=True)
class ReportInputs:
    experiment: str
    suite: str
    tasks: Mapping[str, int]  # train / val / test sizes
    chosen: Mapping[str, Any]  # version, name, origin, path
    rows: Sequence[Row]
    acceptance: AcceptanceConfig
    tolerance: float
    rounds: Sequence[Mapping[str, Any]] = ()
    stopped: str = ""
    points: Sequence[Mapping[str, Any]] = ()
    front: Sequence[Mapping[str, Any]] = ()
    shortlist: Sequence[Mapping[str, Any]] = ()
    parts: Sequence[Part] = ()
    deterministic: Mapping[str, Any] | None = None
    budget: Mapping[str, Any] = field(default_factory=dict)
    infrastructure: Mapping[str, Any] = field(default_factory=dict)
    wall_s: float | None = None  # the job's own running time, over every resume
    mlflow: Mapping[str, str] = field(default_factory=dict)  # tracking_uri, experiment_id, run_id, url


def build_report(inputs: ReportInputs) -> dict[str, Any]:
    rows = {(r.name, r.tier): r for r in inputs.rows}
    tier0 = [r for r in inputs.rows if r.tier == "reference"]
    chosen = rows.get(("chosen", "reference"))
    none = rows.get(("none", "reference"))
    best = best_baseline(tier0, none, inputs.tolerance) if none else None
    table = [_row(r, chosen, none) for r in inputs.rows]
    for entry, r in zip(table, inputs.rows, strict=True):
        screened = rows.get((r.name, "reference"))
        if r.tier != "reference" and screened is not None:
            entry["facts_visible"] = screened.scores.facts_visible  # the data flow is tier 0's measure
            entry["behaviour"] = behaviour(r.scores, screened.scores)
    report: dict[str, Any] = {
        "experiment": inputs.experiment,
        "suite": inputs.suite,
        "tasks": dict(inputs.tasks),
        "chosen": {**dict(inputs.chosen), **(_row(chosen, None, none) if chosen else {})},
        "rows": table,
        "best_baseline": best.name if best else None,
        "paired": {
            name: paired(chosen.scores, other.scores)
            for name, other in (("none", none), ("seed", rows.get(("seed", "reference"))), ("best_baseline", best))
            if chosen and other is not None
        },
        "llm_parts": [p.to_dict() for p in inputs.parts if p.llm],
        "parts": [p.to_dict() for p in inputs.parts],
        "deterministic": dict(inputs.deterministic) if inputs.deterministic else None,
        "shortlist": [dict(s) for s in inputs.shortlist],
        "rounds": [dict(r) for r in inputs.rounds],
        "stopped": inputs.stopped,
        "pareto": [dict(p) for p in inputs.front],
        "points": [dict(p) for p in inputs.points],
        "budget": dict(inputs.budget),
        "infrastructure": dict(inputs.infrastructure),
        "tier0_limits": list(TIER0_LIMITS),
        "wall_s": inputs.wall_s,
        "mlflow": dict(inputs.mlflow),
    }
    # The real agent's verdict on the same test tasks, where the job ran it: chosen against full context and
    # against the tier-1 baseline with the lowest peak that keeps full context's tier-1 success.
    chosen1, none1 = rows.get(("chosen", "llm")), rows.get(("none", "llm"))
    best1 = best_baseline([r for r in inputs.rows if r.tier == "llm"], none1, inputs.tolerance) if none1 else None
    report["best_baseline_tier1"] = best1.name if best1 else None
    report["paired_tier1"] = {
        name: paired(chosen1.scores, other.scores)
        for name, other in (("none", none1), ("best_baseline", best1))
        if chosen1 and other is not None
    }
    report["acceptance"] = acceptance(inputs, rows, best)
    report["cut"] = cut(report)
    return report


def cut(report: Mapping[str, Any]) -> dict[str, Any]:
    """The headline: the chosen guideline's tier-0 mean peak and success against `none` and the best baseline."""
    rows = {(r["strategy"], r["tier"]): r for r in report["rows"]}
    chosen, none = rows.get(("chosen", "reference")), rows.get(("none", "reference"))
    if chosen is None or none is None:
        return {}
    out: dict[str, Any] = {
        "peak": chosen["peak_tokens_mean"],
        "success": chosen["success"],
        "none_peak": none["peak_tokens_mean"],
        "none_success": none["success"],
        "vs_none": _change(chosen["peak_tokens_mean"], none["peak_tokens_mean"]),
    }
    best = rows.get((report["best_baseline"], "reference")) if report.get("best_baseline") else None
    if best is not None:
        out.update(
            best_baseline=best["strategy"],
            best_peak=best["peak_tokens_mean"],
            best_success=best["success"],
            vs_best=_change(chosen["peak_tokens_mean"], best["peak_tokens_mean"]),
        )
    return out


def _change(value: float, reference: float) -> float | None:
    return value / reference - 1 if reference else None


def duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes else f"{rest} s"


def headline(report: Mapping[str, Any]) -> list[str]:
    """The lines a reviewer reads first: the cut, the acceptance verdict, the wall time, where the run is."""
    lines = []
    c = report.get("cut") or {}
    if c:
        text = (
            f"**Cut:** mean peak {c['peak']:,.0f} tokens vs {c['none_peak']:,.0f} under `none`"
            + (f" ({c['vs_none']:+.1%})" if c.get("vs_none") is not None else "")
            + f", success {c['success']:.2f} vs {c['none_success']:.2f}"
        )
        if c.get("best_baseline"):
            text += (
                f"; vs the best baseline `{c['best_baseline']}` {c['best_peak']:,.0f}"
                + (f" ({c['vs_best']:+.1%})" if c.get("vs_best") is not None else "")
                + f", success {c['best_success']:.2f}"
            )
        lines.append(text + " (tier 0, test split).")
    verdicts = report.get("acceptance", {}).get("tiers", {})
    if verdicts:
        lines.append(
            "**Acceptance:** "
            + ", ".join(f"{tier} {'PASS' if v['pass'] else 'FAIL'}" for tier, v in verdicts.items())
            + "."
        )
    if report.get("wall_s") is not None:
        lines.append(f"**Wall time:** {duration(report['wall_s'])}.")
    run = report.get("mlflow") or {}
    if run.get("run_id"):
        lines.append(
            f"**MLflow run:** `{run['run_id']}` in experiment {run.get('experiment_id')} ({run.get('tracking_uri')})."
        )
    return lines


def best_baseline(rows: Sequence[Row], none: Row, tolerance: float) -> Row | None:
    """The fixed baseline with the lowest mean peak among those keeping success within the tolerance."""
    keeping = [r for r in rows if r.kind == "baseline" and r.scores.success >= none.scores.success - tolerance - 1e-9]
    return min(keeping, key=lambda r: r.scores.peak_mean) if keeping else None


def paired(a: Scores, b: Scores) -> dict[str, Any]:
    """Mean differences a − b over the tasks both have, with 95 % bootstrap intervals."""
    theirs = b.by_task()
    common = [t for t in a.tasks if t.task_id in theirs]
    if not common:
        return {"tasks": 0}
    peak = paired_bootstrap_diff([t.peak_tokens for t in common], [theirs[t.task_id].peak_tokens for t in common])
    success = paired_bootstrap_diff(
        [float(t.success) for t in common], [float(theirs[t.task_id].success) for t in common]
    )
    other_peak = sum(theirs[t.task_id].peak_tokens for t in common) / len(common)
    return {
        "tasks": len(common),
        "peak_diff": peak[0],
        "peak_diff_ci": [peak[1], peak[2]],
        "peak_ratio": (1 + peak[0] / other_peak) if other_peak else None,
        "success_diff": success[0],
        "success_diff_ci": [success[1], success[2]],
    }


def behaviour(tier1: Scores, tier0: Scores) -> dict[str, Any]:
    """Of the tasks where tier 0 saw every needed fact in the request when its step came, the share the
    tier-1 agent solved under the same strategy: the behaviour layer, apart from the data flow.

    A loss here is the model not acting on what it was shown; a loss in visibility is compression's.
    """
    visible = tier0.all_visible()
    acted = [t.success for t in tier1.tasks if t.task_id in visible]
    return {"tasks": len(acted), "success": sum(acted) / len(acted) if acted else None}


def _row(row: Row, chosen: Row | None, none: Row | None) -> dict[str, Any]:
    out = {"strategy": row.name, "kind": row.kind, "tier": row.tier, "version": row.version, **row.scores.headline()}
    out["summary"] = {
        k: row.scores.summary.get(k)
        for k in (
            "dependency_mean",
            "total_tokens",
            "cache_breaks",
            "cache_breaks_per_episode",
            "duplicate_writes",
            "infra_errors",
            "cost_source",
            "projected",
        )
    }
    if none is not None and none.scores.peak_mean:
        out["peak_vs_none"] = row.scores.peak_mean / none.scores.peak_mean
    if chosen is not None and row is not chosen:
        out["both_solved"] = both_solved(chosen.scores, row.scores)
    return out


def _breaks_cell(row: Mapping[str, Any]) -> str:
    breaks = row.get("summary", {}).get("cache_breaks_per_episode")
    return f"{breaks:.2f}" if breaks is not None else "–"


def _cost_cell(row: Mapping[str, Any]) -> str:
    cost = row.get("cost_per_success")
    return f"{cost:.4f}" if cost is not None else "–"


def both_solved(chosen: Scores, other: Scores) -> dict[str, Any]:
    """Mean peak tokens of both strategies over the tasks both of them solved.

    A failed episode often ends early, before its largest context, so a strategy that breaks tasks can
    show a lower mean peak than one that solves them; on the tasks both solved, peaks compare like for like.
    """
    solved = {t.task_id: t.peak_tokens for t in chosen.tasks if t.success}
    pairs = [(solved[t.task_id], t.peak_tokens) for t in other.tasks if t.success and t.task_id in solved]
    if not pairs:
        return {"tasks": 0, "chosen_peak_mean": None, "peak_mean": None}
    return {
        "tasks": len(pairs),
        "chosen_peak_mean": sum(c for c, _ in pairs) / len(pairs),
        "peak_mean": sum(o for _, o in pairs) / len(pairs),
    }


def acceptance(inputs: ReportInputs, rows: Mapping[tuple[str, str], Row], best: Row | None) -> dict[str, Any]:
    """Each declared bar against `none`, the seed and the best baseline, paired over common tasks.

    The point estimate decides pass or fail, as declared; the paired 95 % interval stands beside it and
    says whether a difference is significant, because on 16 tasks a mean can pass by luck.
    """
    bars = inputs.acceptance
    out: dict[str, Any] = {"declared": bars.model_dump(), "tiers": {}}
    for tier in ("reference", "llm"):
        chosen, none = rows.get(("chosen", tier)), rows.get(("none", tier))
        if chosen is None or none is None:
            continue
        vs_none = paired(chosen.scores, none.scores)
        drop = none.scores.success - chosen.scores.success
        reduction = 1 - chosen.scores.peak_mean / none.scores.peak_mean if none.scores.peak_mean else 0.0
        checks: dict[str, dict[str, Any]] = {
            "success_drop": {
                "value": drop,
                "bar": bars.max_success_drop,
                "pass": drop <= bars.max_success_drop + 1e-9,
                "paired_ci": _negated(vs_none.get("success_diff_ci")),
                "significant": bool(vs_none.get("tasks")) and vs_none["success_diff_ci"][1] < 0,
            },
            "peak_reduction": {
                "value": reduction,
                "bar": bars.min_peak_reduction,
                "pass": reduction >= bars.min_peak_reduction,
            },
            "blocking": {
                "value": chosen.scores.blocking,
                "bar": bars.max_blocking,
                "pass": chosen.scores.blocking <= bars.max_blocking,
            },
        }
        for name, other in (
            ("seed", rows.get(("seed", tier))),
            ("best_baseline", best if tier == "reference" else None),
        ):
            if other is None:
                continue
            versus = paired(chosen.scores, other.scores)
            if not versus.get("tasks"):
                continue
            # A strategy that fails tasks often ends them early, below any peak a solving one reaches: its
            # peak is no bar for a guideline that solves more (the seed solving 3 of 8 is not a competitor).
            solves_fewer = other.scores.success < chosen.scores.success - inputs.tolerance - 1e-9
            low, high = versus["peak_diff_ci"]
            checks[f"at_or_below_{name}"] = {
                "value": versus["peak_diff"],
                "bar": 0,
                "pass": solves_fewer or versus["peak_diff"] <= 1e-9,
                "paired_ci": versus["peak_diff_ci"],
                "tasks": versus["tasks"],
                "against": other.name if name == "best_baseline" else "seed",
                "significant": low > 0 or high < 0,
                "solves_fewer": [other.scores.success, chosen.scores.success] if solves_fewer else None,
            }
        name = "tier0" if tier == "reference" else "tier1"
        out["tiers"][name] = {"suite": inputs.suite, "checks": checks, "pass": all(c["pass"] for c in checks.values())}
    out["pass"] = all(t["pass"] for t in out["tiers"].values())
    return out


def _negated(ci: Sequence[float] | None) -> list[float] | None:
    return [0.0 - ci[1] + 0.0, 0.0 - ci[0] + 0.0] if ci else None  # + 0.0: no "-0.000" in the report


def report_markdown(report: Mapping[str, Any]) -> str:
    sizes = report["tasks"]
    lines = [
        f"# acon optimize: {report['experiment']}",
        "",
        f"Suite `{report['suite']}`: {sizes.get('train', 0)} train tasks (candidates mined), "
        f"{sizes.get('val', 0)} validation (chosen on), {sizes.get('test', 0)} test (reported below). "
        f"Chosen guideline: `{report['chosen'].get('path')}` ({report['chosen'].get('name')}, "
        f"{report['chosen'].get('origin')}).",
        "",
        *[f"{line}  " for line in headline(report)],
        "",
        "| strategy | tier | tasks | success | 95% CI | never recalls | recalls | peak mean | peak 95% CI | "
        "× none | peak max | compressor | blocking | peak, both solved (chosen vs this) | breaks/episode | "
        "$/success | facts visible | acted on (tier 1) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        low, high = r["success_ci"]
        plow, phigh = r["peak_tokens_ci"]
        ratio = f"{r['peak_vs_none']:.2f}" if r.get("peak_vs_none") is not None else "–"
        lines.append(
            f"| {r['strategy']} | {r['tier']} | {r['tasks']} | {r['success']:.2f} | [{low:.2f}, {high:.2f}] | "
            f"{r['success_without_recall']:.2f} | {r['recall_calls']} | {r['peak_tokens_mean']:,.0f} | "
            f"[{plow:,.0f}, {phigh:,.0f}] | {ratio} | {r['peak_tokens_max']:,} | {r['compressor_tokens']:,} | "
            f"{r['blocking']} | {both_solved_cell(r)} | {_breaks_cell(r)} | {_cost_cell(r)} | "
            f"{_share_cell(r.get('facts_visible'))} | {_behaviour_cell(r)} |"
        )
    sources = sorted({str(r.get("summary", {}).get("cost_source")) for r in report["rows"]} - {"None"})
    lines += [
        "",
        "*never recalls*: share of tasks solved without a single recall (what an agent that never "
        "recalls would at least solve). The oracle keeps exactly what the reference needs: the floor. "
        f"*$/success*: {', '.join(sources) or 'not priced'}; *breaks*: requests that rewrote the previous one. "
        "*facts visible*: share of the needed facts the request showed when their step came (the data flow, "
        "measured at tier 0); *acted on*: of the tasks where tier 0 saw every needed fact, the share the tier-1 "
        "agent solved under the same strategy (the behaviour).",
        "",
    ]
    for tier, key, best_key in (
        ("tier 0", "paired", "best_baseline"),
        ("tier 1", "paired_tier1", "best_baseline_tier1"),
    ):
        for name, p in report.get(key, {}).items():
            if not p.get("tasks"):
                continue
            other = report[best_key] if name == "best_baseline" else name
            low, high = p["peak_diff_ci"]
            slow, shigh = p["success_diff_ci"]
            lines.append(
                f"- {tier}: chosen vs `{other}` (paired, {p['tasks']} tasks): peak {p['peak_diff']:+,.0f} tokens "
                f"[{low:+,.0f}, {high:+,.0f}], success {p['success_diff']:+.2f} [{slow:+.2f}, {shigh:+.2f}]"
            )
    lines += ["", "## Where the chosen guideline came from", ""]
    for part in report["parts"]:
        who = f"{part['origin']} (LLM)" if part["llm"] else part["origin"]
        lines.append(f"- round {part['round']}, {who}: {part['change']}")
    llm = report["llm_parts"]
    lines.append("")
    lines.append(
        f"Parts written by the LLM: {len(llm)}." if llm else "No part of the chosen guideline was written by the LLM."
    )
    det = report.get("deterministic")
    if det:
        lines.append(
            f"Without LLM-written parts, the best candidate of this job was `{det['name']}@{det['version']}`"
            + (
                f" (test: success {det['success']:.2f}, peak {det['peak_tokens_mean']:,.0f})"
                if det.get("success") is not None
                else ""
            )
            + "."
        )
    if report["shortlist"]:
        lines += [
            "",
            "## Selection on the validation split",
            "",
            "| candidate | origin | success | peak mean |",
            "|---|---|---|---|",
        ]
        for s in report["shortlist"]:
            lines.append(
                f"| {s['name']}@{s['version']} | {s['origin']} | {s['success']:.2f} | {s['peak_tokens_mean']:,.0f} |"
            )
    lines += [
        "",
        "## Rounds",
        "",
        "| round | pairs | screened | by proposer | improved | best |",
        "|---|---|---|---|---|---|",
    ]
    for r in report["rounds"]:
        origins = ", ".join(f"{n} {o}" for o, n in (r.get("origins") or {}).items()) or "–"
        lines.append(
            f"| {r['round']} | {r['pairs']} | {len(r['screened'])} | {origins} | {r['improved']} | {r['best']} |"
        )
    lines += [
        "",
        f"Stopped: {report['stopped']}.",
        "",
        "## Pareto front (train, screening tier)",
        "",
        "| label | success | peak mean |",
        "|---|---|---|",
    ]
    for p in report["pareto"]:
        lines.append(f"| {p['label']} | {p['success']:.2f} | {p['peak_tokens']:,.0f} |")
    b = report["budget"]
    lines += [
        "",
        "## Budget",
        "",
        f"- candidates screened: {b.get('candidates', 0)}",
        f"- agent (tier-1) episodes: {b.get('agent_episodes', 0)}",
        f"- compressor calls (uncached): {b.get('compressor_calls', 0)}",
        f"- optimizer tokens: {b.get('optimizer_tokens', 0)}",
    ]
    infra = report.get("infrastructure") or {}
    if infra:
        lines += [
            "",
            "## Infrastructure",
            "",
            f"- model calls retried: {infra['retried_calls']} ({infra['retries']} extra attempts)",
            f"- episodes excluded as infrastructure errors: {infra['excluded_episodes']} "
            f"(plus {infra['redone_episodes']} that were run again)",
            f"- malformed agent replies (the agent was asked again): {infra['malformed_agent_replies']}",
            f"- optimizer calls that failed (recorded as failed proposals): {infra['failed_optimizer_calls']}",
            f"- optimizer replies whose proposal was refused: {infra.get('refused_proposals', 0)}",
        ]
        if infra.get("errors_by_kind"):
            lines.append(
                "- infrastructure errors by kind: " + ", ".join(f"{k} {n}" for k, n in infra["errors_by_kind"].items())
            )
    lines += ["", "## Acceptance (declared before the run)", ""]
    for tier, verdict in report["acceptance"]["tiers"].items():
        lines.append(f"- {tier} ({verdict['suite']}): {'PASS' if verdict['pass'] else 'FAIL'}")
        for name, check in verdict["checks"].items():
            lines.append(f"  - {check_line(name, check)}")
    lines += ["", "## What tier 0 does not track", ""] + [f"- {item}" for item in report["tier0_limits"]]
    return "\n".join(lines) + "\n"


def check_line(name: str, check: Mapping[str, Any]) -> str:
    """One acceptance check as every surface prints it (report, CLI, MLflow front page)."""
    verdict = "pass" if check["pass"] else "FAIL"
    if name.startswith("at_or_below_"):
        low, high = check["paired_ci"]
        sure = "significant" if check["significant"] else "not significant"
        fewer = check.get("solves_fewer")
        why = f"; `{check['against']}` solves fewer ({fewer[0]:.2f} vs {fewer[1]:.2f})" if fewer else ""
        return (
            f"{name} (`{check['against']}`, paired over {check['tasks']} tasks): peak {check['value']:+,.0f} tokens "
            f"[{low:+,.0f}, {high:+,.0f}], {sure}{why}: {verdict}"
        )
    interval = f" [{check['paired_ci'][0]:+.3f}, {check['paired_ci'][1]:+.3f}]" if check.get("paired_ci") else ""
    return f"{name}: {check['value']:,.3f}{interval} (bar {check['bar']:,}) {verdict}"


def _share_cell(value: float | None) -> str:
    return f"{value:.2f}" if value is not None else "–"


def _behaviour_cell(row: Mapping[str, Any]) -> str:
    acted = row.get("behaviour")
    if not acted:
        return "–"
    return f"{_share_cell(acted['success'])} ({acted['tasks']})"


def both_solved_cell(row: Mapping[str, Any]) -> str:
    paired_row = row.get("both_solved")
    if not paired_row:
        return "–"
    if not paired_row["tasks"]:
        return "no task"
    return f"{paired_row['chosen_peak_mean']:,.0f} vs {paired_row['peak_mean']:,.0f} ({paired_row['tasks']})"
