"""How far tier 0 predicts tier 1: the same (task, strategy) cells with the reference agent and the local model.

    python benchmarks/bench_fidelity.py [--repeats 3] [--temperature 0.3] [--out benchmarks/results/fidelity.json]

The `reach` suite (six short shop tasks the 1.5B agent can solve with full context) under `none`, two
lossy baselines tuned to fire on these small results (`offload_preview` with a 250-token cut, which a
recall undoes, and `mask_last_n` keeping one raw observation, which nothing undoes), the seed guideline
(0.5B compressor) and the learned built-in guideline. Tier 0 runs once per cell (it is deterministic) for
each setting of its recall knob; tier 1 runs every cell `--repeats` times, each repeat with its own
sampling seed at `--temperature`, so the agent's own variance shows.

Reported: the agent's success under `none` per task (the suite's premise: at least 80 %), the confusion
matrix of tier-0 against tier-1 verdicts over every tier-1 episode, agreement and the false-pass rate
(tier 0 passes, tier 1 fails on a task and seed where `none` passed at tier 1) with Wilson intervals, the
reason for every disagreement read from the episode pair, and the agreement under each setting of the
tier-0 knobs, the fitted one marked. Prints tables and writes JSON; runs are stored under `--runs` and
reused, so an interrupted run resumes.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from optimizer import _offline  # noqa: E402,F401
from optimizer.agent.episode import Episode  # noqa: E402
from optimizer.config import ExperimentConfig, load_experiment  # noqa: E402
from optimizer.context.guideline import Guideline, read_guideline  # noqa: E402
from optimizer.context.recall import RECALL_TOOL  # noqa: E402
from optimizer.context.strategies import ContextStrategy, GuidelineStrategy, parse_strategy  # noqa: E402
from optimizer.evaluate.calibration import Cell, fit_recall_probability  # noqa: E402
from optimizer.evaluate.endpoints import ModelEndpoints  # noqa: E402
from optimizer.evaluate.strategy_runs import RunResult, run_strategy, select_tasks  # noqa: E402
from optimizer.interrupts import run_main  # noqa: E402
from optimizer.stats import wilson_interval  # noqa: E402
from optimizer.world.task import Task  # noqa: E402

CONFIG = ROOT / "experiments" / "reach.toml"
# Learned on BFCL long_context: the built-in suite's learned guidelines never fire on results this small
# (their rows would equal `none` and agree for free); this one offloads with a preview and needs recalls.
LEARNED = ROOT / "guidelines" / "learned" / "bfcl_long_context.md"
SEED_WRITE_OVER, SEED_HISTORY_OVER = 300, 600
TIER0_KNOBS = ("honest", "never")  # the reference agent's recall setting; "honest" is the product default
DEFAULT_KNOB = "honest"


def strategies(config: ExperimentConfig) -> dict[str, ContextStrategy]:
    return {
        "none": parse_strategy("none"),
        "offload_preview": parse_strategy(
            {"type": "offload_preview", "max_tokens": 250, "head_tokens": 60, "tail_tokens": 30}
        ),
        "mask_last_n": parse_strategy({"type": "mask_last_n", "n": 1, "keep_first": False}),
        "seed": GuidelineStrategy(guideline=lowered(read_guideline(ROOT / config.guideline))),
        "learned": GuidelineStrategy(guideline=read_guideline(LEARNED)),
    }


def lowered(guideline: Guideline) -> Guideline:
    """The seed with its triggers lowered to fire on these results (at 1,024 / 2,048 tokens it never does)."""
    policy = guideline.policy
    write = tuple(m.model_copy(update={"over": SEED_WRITE_OVER}) if hasattr(m, "over") else m for m in policy.write)
    history = tuple(
        m.model_copy(update={"over": SEED_HISTORY_OVER}) if hasattr(m, "over") else m for m in policy.history
    )
    return guideline.model_copy(
        update={"name": "seed+lowered", "policy": policy.model_copy(update={"write": write, "history": history})}
    )


@dataclass(frozen=True)
class Verdict:
    success: bool
    episode: Episode


def run_tier0(
    config: ExperimentConfig, tasks: Sequence[Task], named: dict[str, ContextStrategy], runs: Path, knob: str
) -> dict[tuple[str, str, str], Verdict]:
    """Every strategy once with the reference agent as `config.run` sets it (deterministic: one run a cell)."""
    out: dict[tuple[str, str, str], Verdict] = {}
    with ModelEndpoints({"compressor": config.endpoints.compressor}, log=_log) as endpoints:
        for name, strategy in named.items():
            result = run_strategy(
                config, tasks, strategy, agent="reference", endpoints=endpoints, split="all", base=runs
            )
            out.update(((knob, name, t), v) for t, v in _verdicts(result).items())
            _log(f"tier 0 ({knob}) {name}: {_rate(result)}")
    return out


def run_all(
    config: ExperimentConfig,
    tasks: Sequence[Task],
    named: dict[str, ContextStrategy],
    repeats: int,
    temperature: float,
    runs: Path,
) -> tuple[dict[tuple[str, str, str], Verdict], dict[tuple[str, str, int], Verdict], dict[str, float]]:
    """Tier-0 verdicts by (knob, strategy, task) and tier-1 verdicts by (strategy, task, seed)."""
    tier0: dict[tuple[str, str, str], Verdict] = {}
    tier1: dict[tuple[str, str, int], Verdict] = {}
    wall: Counter[str] = Counter()
    for knob in TIER0_KNOBS:
        started = time.perf_counter()
        tier0.update(run_tier0(config.with_overrides(run={"recall": knob}), tasks, named, runs, knob))
        wall["tier0"] += time.perf_counter() - started
    for seed in range(1, repeats + 1):
        seeded = config.with_overrides(
            endpoints={"agent": {**_dump(config, "agent"), "seed": seed, "temperature": temperature}}
        )
        roles = {"agent": seeded.endpoints.agent, "compressor": seeded.endpoints.compressor}
        with ModelEndpoints(roles, log=_log) as endpoints:
            for name, strategy in named.items():
                started = time.perf_counter()
                result = run_strategy(seeded, tasks, strategy, agent="llm", endpoints=endpoints, split="all", base=runs)
                wall["tier1"] += time.perf_counter() - started
                tier1.update(((name, t, seed), v) for t, v in _verdicts(result).items())
                _log(f"tier 1 seed {seed} {name}: {_rate(result)} ({time.perf_counter() - started:.0f} s)")
    return tier0, tier1, dict(wall)


def _dump(config: ExperimentConfig, role: str) -> dict[str, Any]:
    return getattr(config.endpoints, role).model_dump(mode="python")


def _verdicts(result: RunResult) -> dict[str, Verdict]:
    return {episode.task_id: Verdict(episode.success, episode) for episode in result.scored_episodes()}


def _rate(result: RunResult) -> str:
    s = result.episodes.summaries
    return f"{sum(e.success for e in s)}/{len(s)}"


def request_texts(episode: Episode) -> str:
    return "\n".join(episode.texts.get(m["text"], "") for step in episode.steps for m in step.request)


def compressed(episode: Episode, none: Episode) -> bool:
    """Whether the strategy changed what the agent saw: a compression record, a recall, or another peak."""
    return (
        bool(episode.records)
        or episode.metrics.recall_calls > 0
        or episode.metrics.peak_tokens != none.metrics.peak_tokens
    )


def why(task: Task, strategy: str, t0: Verdict, t1: Verdict, none_t1: Verdict) -> str:
    """The episode pair's account of one disagreement."""
    made = t1.episode.metrics.recall_calls
    if t0.success and not t1.success:
        if not none_t1.success:
            return "the agent failed this task under `none` too on this seed (its own variance)"
        if any(d.behaviour == "recall" for d in t0.episode.deviations) and made == 0:
            return "a recall the model did not make (tier 0 recalled the cleared result)"
        bad = [dict(c.arguments) for c in t1.episode.tool_calls if c.name == RECALL_TOOL and c.is_error]
        if bad:
            return f"the model called recall on what is not a handle ({bad[0]}) and answered from the error"
        expected = t0.episode.metrics.recall_calls
        if made >= 2 * max(1, expected) and any("step limit" in r for r in t1.episode.reasons):
            return f"the model recalled in a loop ({made} recalls; tier 0: {expected}) and never answered"
        needed = [n.literal for step in task.reference for n in step.needs]
        shown = request_texts(t1.episode)
        missing = [literal for literal in needed if literal not in shown]
        reasons = "; ".join(t1.episode.reasons)
        if not missing:
            return f"every needed fact was visible, the model did not act on it: {reasons[:140]}"
        return f"the model's context lacked {missing} (it took another path than the reference): {reasons[:120]}"
    if made and not any(d.behaviour == "recall" for d in t0.episode.deviations):
        return f"the model recalled ({made}) what this tier-0 setting does not recall"
    lost = [f"{d.kind} {d.literal!r} ({d.behaviour})" for d in t0.episode.deviations if d.behaviour != "recall"]
    return "tier 0 too strict: the model did without " + (", ".join(lost) or "what tier 0 missed")


def analyse(
    tasks: Sequence[Task],
    names: Sequence[str],
    tier0: dict[tuple[str, str, str], Verdict],
    tier1: dict[tuple[str, str, int], Verdict],
    repeats: int,
    knob: str,
) -> dict[str, Any]:
    matrix = Counter[str]()
    changed = Counter[str]()  # the same, over cells whose tier-0 context differs from `none`'s
    false_pass = guarded = 0
    disagreements = []
    for task in tasks:
        for name in names:
            t0 = tier0[(knob, name, task.id)]
            for seed in range(1, repeats + 1):
                t1 = tier1[(name, task.id, seed)]
                verdict = f"tier0_{'pass' if t0.success else 'fail'}_tier1_{'pass' if t1.success else 'fail'}"
                matrix[verdict] += 1
                if name != "none" and compressed(t0.episode, tier0[(knob, "none", task.id)].episode):
                    changed[verdict] += 1
                none_t1 = tier1[("none", task.id, seed)]
                if t0.success and none_t1.success and name != "none":
                    guarded += 1
                    false_pass += not t1.success
                if t0.success != t1.success:
                    disagreements.append(
                        {
                            "task": task.id,
                            "strategy": name,
                            "seed": seed,
                            "tier0": t0.success,
                            "tier1": t1.success,
                            "why": why(task, name, t0, t1, none_t1),
                        }
                    )
    n = sum(matrix.values())
    agree = matrix["tier0_pass_tier1_pass"] + matrix["tier0_fail_tier1_fail"]
    n_changed = sum(changed.values())
    agree_changed = changed["tier0_pass_tier1_pass"] + changed["tier0_fail_tier1_fail"]
    return {
        "knob": knob,
        "episodes": n,
        "confusion": dict(matrix),
        "agreement": agree / n if n else None,
        "agreement_ci": wilson_interval(agree, n),
        "changed_episodes": n_changed,
        "changed_confusion": dict(changed),
        "changed_agreement": agree_changed / n_changed if n_changed else None,
        "changed_agreement_ci": wilson_interval(agree_changed, n_changed),
        "false_pass": false_pass,
        "false_pass_of": guarded,
        "false_pass_rate": false_pass / guarded if guarded else None,
        "false_pass_ci": wilson_interval(false_pass, guarded),
        "disagreements": disagreements,
    }


def recall_fit(
    tasks: Sequence[Task],
    names: Sequence[str],
    tier0: dict[tuple[str, str, str], Verdict],
    tier1: dict[tuple[str, str, int], Verdict],
    repeats: int,
) -> dict[str, Any]:
    """The probability p that the agent makes a recall tier 0 would make, fitted to the tier-1 verdicts.

    A tier-0 agent recalling with probability p passes a cell whose honest run needed k recalls with
    probability p**k where the never-recalling run fails (1 where both pass, 0 where the honest run fails),
    so both tier-0 runs give each cell's predicted pass probability exactly; p = 1 is `honest`, p = 0 is
    `never`. p is the maximum-likelihood value on a grid; what it is for is the predicted success rate of
    each strategy, compared with tier 1's before (p = 1) and after fitting.
    """
    cells: dict[str, list[Cell]] = {name: [] for name in names}
    for task in tasks:
        for name in names:
            honest, never = tier0[("honest", name, task.id)], tier0[("never", name, task.id)]
            k = honest.episode.metrics.recall_calls
            for seed in range(1, repeats + 1):
                t1 = tier1[(name, task.id, seed)].success
                cells[name].append(Cell(name, task.id, seed, "all", honest.success, never.success, k, t1, None))
    p_hat = fit_recall_probability([c for rows in cells.values() for c in rows])

    def predicted(p: float) -> dict[str, float]:
        return {name: sum(c.pass_probability(p) for c in rows) / len(rows) for name, rows in cells.items()}

    observed = {name: sum(c.tier1_ok for c in rows) / len(rows) for name, rows in cells.items()}
    by_p = {
        "honest (p = 1)": predicted(1.0),
        "never (p = 0)": predicted(0.0),
        f"fitted (p = {p_hat:.2f})": predicted(p_hat),
    }
    error = {label: sum(abs(rates[n] - observed[n]) for n in names) / len(names) for label, rates in by_p.items()}
    return {"p_hat": p_hat, "tier1_success": observed, "predicted_success": by_p, "mean_abs_error": error}


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--temperature", type=float, default=0.3)
    parser.add_argument("--runs", type=Path, default=ROOT / "runs" / "bench_fidelity")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "fidelity.json")
    args = parser.parse_args(argv)
    config = load_experiment(CONFIG).with_overrides(tracking={"enabled": False})
    tasks = select_tasks(config, "all", None)
    named = strategies(config)
    started = time.perf_counter()
    tier0, tier1, wall = run_all(config, tasks, named, args.repeats, args.temperature, args.runs)
    names = list(named)
    reach = {
        t.id: sum(tier1[("none", t.id, s)].success for s in range(1, args.repeats + 1)) / args.repeats for t in tasks
    }
    none_passes = sum(tier1[("none", t.id, s)].success for t in tasks for s in range(1, args.repeats + 1))
    recall_probability = recall_fit(tasks, names, tier0, tier1, args.repeats)
    knobs = list(TIER0_KNOBS)
    p_hat = recall_probability["p_hat"]
    if 0.0 < p_hat < 1.0:
        # The fitted value as the product runs it (`run.recall_probability`): a real tier-0 run, scored alike.
        label = f"honest, p = {p_hat:.2f}"
        overrides = {"recall": "honest", "recall_probability": p_hat}
        tier0.update(run_tier0(config.with_overrides(run=overrides), tasks, named, args.runs, label))
        knobs.append(label)
    fits = {knob: analyse(tasks, names, tier0, tier1, args.repeats, knob) for knob in knobs}
    fitted = max(knobs, key=lambda k: (fits[k]["agreement"], -fits[k]["false_pass"]))
    cells = [
        {
            "task": t.id,
            "strategy": name,
            **{f"tier0_{knob}": tier0[(knob, name, t.id)].success for knob in knobs},
            "tier1_passes": sum(tier1[(name, t.id, s)].success for s in range(1, args.repeats + 1)),
            "tier1_recalls": sum(
                tier1[(name, t.id, s)].episode.metrics.recall_calls for s in range(1, args.repeats + 1)
            ),
            "tier0_recalls": tier0[(DEFAULT_KNOB, name, t.id)].episode.metrics.recall_calls,
        }
        for t in tasks
        for name in names
    ]
    report = {
        "benchmark": "fidelity",
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}",
        "agent_model": config.endpoints.agent.model,
        "compressor_model": config.endpoints.compressor.model,
        "temperature": args.temperature,
        "repeats": args.repeats,
        "strategies": {
            name: s.model_dump(mode="json") if not isinstance(s, GuidelineStrategy) else s.label()
            for name, s in named.items()
        },
        "tasks": [t.id for t in tasks],
        "none_success_by_task": reach,
        "none_success": none_passes / (len(tasks) * args.repeats),
        "none_success_ci": wilson_interval(none_passes, len(tasks) * args.repeats),
        "cells": cells,
        "by_knob": fits,
        "default_knob": DEFAULT_KNOB,
        "fitted_knob": fitted,
        "recall_probability_fit": recall_probability,
        # This invocation's time (stored runs are reused, not re-timed) and what the episodes took when run.
        "wall_s": {**wall, "total": time.perf_counter() - started},
        "tier1_episode_wall_s": sum(v.episode.wall_s for v in tier1.values()),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print_report(report)
    return 0


def _row(*cells: object) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _ci(interval: Sequence[float]) -> str:
    return f"[{interval[0]:.2f}, {interval[1]:.2f}]"


def _pass(ok: bool) -> str:
    return "pass" if ok else "FAIL"


def print_report(r: dict[str, Any]) -> None:
    reps = r["repeats"]
    print(f"\ntier-1 agent {r['agent_model']}, temperature {r['temperature']}, {reps} seeds per cell")
    print(f"`none` at tier 1: {r['none_success']:.2f} {_ci(r['none_success_ci'])} (goal >= 0.80)")
    for task, rate in r["none_success_by_task"].items():
        print(f"  {task:<22} {rate:.2f}")
    knobs = list(r["by_knob"])
    print(
        "\n" + _row("task", "strategy", *(f"tier 0 ({k})" for k in knobs), f"tier 1 passes /{reps}", "recalls t0 / t1")
    )
    print(_row(*["---"] * (len(knobs) + 4)))
    for c in r["cells"]:
        verdicts = (_pass(c[f"tier0_{k}"]) for k in knobs)
        print(
            _row(c["task"], c["strategy"], *verdicts, c["tier1_passes"], f"{c['tier0_recalls']} / {c['tier1_recalls']}")
        )
    header = ("tier-0 recall knob", "episodes", "t0 pass t1 pass", "t0 pass t1 fail", "t0 fail t1 pass")
    print("\n" + _row(*header, "t0 fail t1 fail", "agreement [95 % CI]", "false-pass rate [95 % CI]"))
    print(_row(*["---"] * 8))
    for knob, f in r["by_knob"].items():
        m = f["confusion"]
        mark = (" (fitted)" if knob == r["fitted_knob"] else "") + (" (default)" if knob == r["default_knob"] else "")
        rate = (
            "n/a"
            if f["false_pass_rate"] is None
            else f"{f['false_pass']}/{f['false_pass_of']} = {f['false_pass_rate']:.2f}"
        )
        print(
            _row(
                knob + mark,
                f["episodes"],
                *(m.get(k, 0) for k in ("tier0_pass_tier1_pass", "tier0_pass_tier1_fail", "tier0_fail_tier1_pass")),
                m.get("tier0_fail_tier1_fail", 0),
                f"{f['agreement']:.2f} {_ci(f['agreement_ci'])}",
                f"{rate} {_ci(f['false_pass_ci'])}",
            )
        )
    for knob, f in r["by_knob"].items():
        if f["changed_agreement"] is not None:
            print(
                f"{knob}: agreement on the {f['changed_episodes']} episodes whose tier-0 context differs from "
                f"`none`'s: {f['changed_agreement']:.2f} {_ci(f['changed_agreement_ci'])}"
            )
    fit = r["recall_probability_fit"]
    labels = list(fit["predicted_success"])
    print(f"\nrecall probability fitted to tier 1 (maximum likelihood): p = {fit['p_hat']:.2f}")
    print(_row("strategy", "tier 1 success", *(f"tier 0, {label}" for label in labels)))
    print(_row(*["---"] * (len(labels) + 2)))
    for name, rate in fit["tier1_success"].items():
        print(_row(name, f"{rate:.2f}", *(f"{fit['predicted_success'][label][name]:.2f}" for label in labels)))
    print(_row("mean abs. error", "", *(f"{fit['mean_abs_error'][label]:.3f}" for label in labels)))
    print(f"\ndisagreements under the fitted knob ({r['fitted_knob']}):")
    for d in r["by_knob"][r["fitted_knob"]]["disagreements"]:
        verdicts = f"tier 0 {_pass(d['tier0'])}, tier 1 {_pass(d['tier1'])}"
        print(f"  {d['task']} / {d['strategy']} / seed {d['seed']}: {verdicts}: {d['why']}")


if __name__ == "__main__":
    run_main(main, "bench_fidelity")
