"""Tier 0 calibrated to the target agent, from the tier-1 episodes an optimize job already ran.

    python benchmarks/bench_calibration.py JOB_DIR [JOB_DIR ...] [--fit-on train] [--judge-on val] \
        [--out benchmarks/results/calibration.json]

Every tier-1 run of the job (`JOB_DIR/runs/*-llm-*`: pairs mined with the real agent, confirmations on the
validation tasks) is a set of cells (strategy, task, sampling seed) with the agent's verdict. The reference
agent (tier 0) runs the same strategies on the same tasks with recall `honest` (the default) and `never`;
the recall probability p is fitted on the `--fit-on` cells (`optimizer.evaluate.calibration`), then tier 0
runs again with `recall_probability = p`, and agreement and false-pass rate against tier 1 are reported on
the `--judge-on` cells (held out from the fit) for the default and the calibrated tier 0. Test-split cells
are never read: calibration is method work, judged on train and validation tasks.

Tier-0 runs are stored under `JOB_DIR/calibration/` and reused. Prints a table, writes JSON.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from optimizer import _offline  # noqa: E402,F401
from optimizer.config import ExperimentConfig  # noqa: E402
from optimizer.context.strategies import ContextStrategy, parse_strategy  # noqa: E402
from optimizer.errors import AconError  # noqa: E402
from optimizer.evaluate.calibration import (  # noqa: E402
    Cell,
    agreement,
    brier,
    fit_agent_model,
    fit_recall_probability,
)
from optimizer.evaluate.endpoints import ModelEndpoints  # noqa: E402
from optimizer.evaluate.store import EpisodeStore  # noqa: E402
from optimizer.evaluate.strategy_runs import run_strategy, select_tasks  # noqa: E402
from optimizer.interrupts import run_main  # noqa: E402
from optimizer.world.task import Task  # noqa: E402

SEALED = "test"


def tier1_runs(job: Path) -> list[dict[str, Any]]:
    """The job's finished tier-1 runs: strategy, split, sampling seed, verdict per task."""
    runs = []
    for meta_path in sorted((job / "runs").glob("*-llm-*/meta.json")):
        meta = json.loads(meta_path.read_text())
        if meta.get("split") == SEALED:
            continue
        # The newest record per task, as every reader of a run counts it; an episode that hit an endpoint
        # error has no verdict, and a run the job left unfinished contributes the episodes it finished.
        verdicts = {
            r["task_id"]: r["outcome"] == "success"
            for r in EpisodeStore(meta_path.parent).latest()
            if r.get("outcome") in ("success", "failure")
        }
        agent = (meta.get("endpoints") or {}).get("agent") or {}
        runs.append(
            {
                "strategy": meta["strategy"],
                "config": meta["strategy_config"],
                "split": meta["split"],
                "seed": int(agent.get("seed") or 0),
                "verdicts": verdicts,
            }
        )
    return runs


def tier0_verdicts(
    config: ExperimentConfig,
    strategy: ContextStrategy,
    tasks: Sequence[Task],
    base: Path,
    endpoints: ModelEndpoints,
    **recall: Any,
) -> dict[str, tuple[bool, int, int]]:
    """(success, recalls made, compression edits) per task with the reference agent under the given recall settings."""
    result = run_strategy(
        config.with_overrides(run=recall),
        tasks,
        strategy,
        agent="reference",
        endpoints=endpoints,
        split="all",
        base=base,
    )
    return {e.task_id: (e.success, e.metrics.recall_calls, e.metrics.compressions) for e in result.scored_episodes()}


def cells_of(
    runs: Sequence[dict[str, Any]],
    honest: dict[tuple[str, str], tuple[bool, int, int]],
    never: dict[tuple[str, str], tuple[bool, int, int]],
) -> list[Cell]:
    none_t1 = {(task, r["seed"]): ok for r in runs if r["strategy"] == "none" for task, ok in r["verdicts"].items()}
    return [
        Cell(
            strategy=r["strategy"],
            task_id=task,
            seed=r["seed"],
            split=r["split"],
            honest_ok=honest[(r["strategy"], task)][0],
            never_ok=never[(r["strategy"], task)][0],
            recalls=honest[(r["strategy"], task)][1],
            tier1_ok=ok,
            none_tier1_ok=none_t1.get((task, r["seed"])),
            edits=honest[(r["strategy"], task)][2],
        )
        for r in runs
        for task, ok in r["verdicts"].items()
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "jobs", type=Path, nargs="+", help="`acon optimize` job directories of one suite, with tier-1 runs."
    )
    parser.add_argument("--fit-on", default="train", help="Split whose cells fit p (default: train).")
    parser.add_argument("--judge-on", default="val", help="Split whose cells judge the fit (default: val).")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "calibration.json")
    args = parser.parse_args(argv)
    if SEALED in (args.fit_on, args.judge_on):
        print(f"bench_calibration: the {SEALED} split is sealed; fit and judge on train and val", file=sys.stderr)
        return 2
    try:
        report = run(args.jobs, args.fit_on, args.judge_on)
    except (AconError, OSError, KeyError, json.JSONDecodeError) as exc:
        print(f"bench_calibration: {exc}", file=sys.stderr)
        return 1
    print_report(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {args.out}")
    return 0


def run(jobs: Sequence[Path], fit_on: str, judge_on: str) -> dict[str, Any]:
    """The first job's config runs tier 0 for every job's cells (the jobs are of one suite)."""
    job = jobs[0]
    config = ExperimentConfig.model_validate(json.loads((job / "job.json").read_text())["config"])
    runs = [r for j in jobs for r in tier1_runs(j)]
    if not runs:
        raise AconError(f"{', '.join(map(str, jobs))}: no tier-1 runs outside the {SEALED} split")
    by_id = {t.id: t for split in ("train", SEALED) for t in select_tasks(config, split, None)}
    cells_by_strategy: dict[str, set[str]] = defaultdict(set)
    configs = {}
    for r in runs:
        cells_by_strategy[r["strategy"]].update(r["verdicts"])
        configs[r["strategy"]] = r["config"]
    base = job / "calibration"
    started = time.perf_counter()
    settings: dict[str, dict[tuple[str, str], tuple[bool, int, int]]] = {"honest": {}, "never": {}}
    with ModelEndpoints({"compressor": config.endpoints.compressor}, log=_log) as endpoints:

        def tier0(**recall: Any) -> dict[tuple[str, str], tuple[bool, int, int]]:
            out = {}
            for name, task_ids in cells_by_strategy.items():
                tasks = [by_id[t] for t in sorted(task_ids)]
                verdicts = tier0_verdicts(config, parse_strategy(configs[name]), tasks, base, endpoints, **recall)
                out.update({(name, t): v for t, v in verdicts.items()})
            return out

        settings["honest"] = tier0(recall="honest", recall_probability=1.0)
        settings["never"] = tier0(recall="never")
        cells = cells_of(runs, settings["honest"], settings["never"])
        fit_cells = [c for c in cells if c.split == fit_on]
        if not fit_cells:
            raise AconError(f"no tier-1 cells on the {fit_on!r} split to fit on")
        p_hat = fit_recall_probability(fit_cells)
        model = fit_agent_model(fit_cells)
        calibrated = tier0(recall="honest", recall_probability=p_hat)
        # The joint fit's p is most often the recall-only fit's: its tier-0 verdicts are then the same run.
        same = model.recall_probability == p_hat
        jointly = calibrated if same else tier0(recall="honest", recall_probability=model.recall_probability)
    seconds = time.perf_counter() - started
    judged = [c for c in cells if c.split == judge_on]
    rows = {}
    for label, verdict in (
        ("default (honest, p = 1)", lambda c: c.honest_ok),
        (f"calibrated (p = {p_hat:.2f})", lambda c: calibrated[(c.strategy, c.task_id)][0]),
        # More likely than not to pass: tier 0's verdict under the fitted p, times u per edit the run made.
        (
            f"calibrated (p = {model.recall_probability:.2f}, u = {model.use_probability:.3f} per edit)",
            lambda c: jointly[(c.strategy, c.task_id)][0] and model.use_probability**c.edits >= 0.5,
        ),
    ):
        rows[label] = {"fit": agreement(fit_cells, verdict), "held_out": agreement(judged, verdict)}
    p, u = model.recall_probability, model.use_probability
    predicted = {
        "default": lambda c: float(c.honest_ok),
        "calibrated": lambda c: c.pass_probability(p, u),
    }
    held_out_by_strategy = {
        name: {
            "cells": len(mine),
            "tier0": sum(predicted["default"](c) for c in mine) / len(mine),
            "tier0_calibrated": sum(predicted["calibrated"](c) for c in mine) / len(mine),
            "tier1": sum(c.tier1_ok for c in mine) / len(mine),
        }
        for name in sorted({c.strategy for c in judged})
        if (mine := [c for c in judged if c.strategy == name])
    }
    return {
        "benchmark": "calibration",
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {platform.system()}",
        "job": config.name,
        "job_dirs": [str(j) for j in jobs],
        "fit_on": fit_on,
        "judge_on": judge_on,
        "p_hat": p_hat,
        "agent_model": model.__dict__,
        "edits_by_strategy": {
            name: sorted({c.edits for c in cells if c.strategy == name}) for name in sorted(cells_by_strategy)
        },
        "tier1_cells": {split: sum(c.split == split for c in cells) for split in sorted({c.split for c in cells})},
        "strategies": sorted(cells_by_strategy),
        "tier1_success_by_strategy": {
            name: _rate([c for c in cells if c.strategy == name]) for name in sorted(cells_by_strategy)
        },
        "rows": rows,
        "brier_held_out": {label: brier(judged, f) for label, f in predicted.items()},
        "held_out_by_strategy": held_out_by_strategy,
        "tier0_seconds": seconds,
        "cells": [c.__dict__ for c in cells],
    }


def _rate(cells: Sequence[Cell]) -> str:
    return f"{sum(c.tier1_ok for c in cells)}/{len(cells)}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def print_report(report: dict[str, Any]) -> None:
    model = report["agent_model"]
    print(
        f"\njob {report['job']}: tier-1 cells {report['tier1_cells']}; fitted p = {report['p_hat']:.2f}; jointly "
        f"p = {model['recall_probability']:.2f}, u = {model['use_probability']:.3f} per edit"
    )
    print(
        "tier-1 success by strategy: " + ", ".join(f"{k} {v}" for k, v in report["tier1_success_by_strategy"].items())
    )
    print(
        f"\n| tier 0 | cells | agreement ({report['fit_on']}, fit) | agreement ({report['judge_on']}, held out) "
        f"| false pass ({report['judge_on']}) |"
    )
    print("|---|---|---|---|---|")
    for label, row in report["rows"].items():
        fit, held = row["fit"], row["held_out"]
        low, high = held["false_pass_ci"]
        print(
            f"| {label} | {fit['cells']} + {held['cells']} | {_pct(fit['agreement'])} | {_pct(held['agreement'])} "
            f"| {held['false_pass']} of {held['false_pass_of']} ({_pct(held['false_pass_rate'])}, "
            f"CI {low:.2f}-{high:.2f}) |"
        )
    scores = report["brier_held_out"]
    print(
        f"\nBrier score on the {report['judge_on']} cells (tier 0's pass probability vs the agent's verdict, lower "
        f"is better): default {_pct(scores['default'])}, calibrated {_pct(scores['calibrated'])}"
    )
    print(f"\n| strategy ({report['judge_on']}) | cells | tier 0 | tier 0 calibrated (expected) | tier 1 |")
    print("|---|---|---|---|---|")
    for name, row in report["held_out_by_strategy"].items():
        print(f"| {name} | {row['cells']} | {row['tier0']:.2f} | {row['tier0_calibrated']:.2f} | {row['tier1']:.2f} |")


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


if __name__ == "__main__":
    run_main(main, "bench_calibration")
