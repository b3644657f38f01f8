"""The summary ceiling at tier 1: what the real agent does from a summary that misses nothing the task needs.

    python benchmarks/probe_summary_ceiling.py --from benchmarks/results/summary_instructions_<...>_val.json
        [--config experiments/summary_reach_long.toml] [--trigger N] [--keep K]
        [--out benchmarks/results/summary_ceiling_<...>_val.json]

Reads a recorded validation run of `bench_summary_instructions.py` (LangChain target, with `--tier1`): its knobs,
its tier-1 tasks, seeds and run store, and its texts. Beside its tier-1 rows (`none`, the default, the learned text
and the deterministic guidelines it ran, read back from the store, so no episode runs twice), it runs the real agent
under `langchain_summary_ceiling` (`optimizer.summary.ceiling`): the same middleware, trigger and keep, with the
summary written from the answer key (every call made, every later user message, every result line a reference step
needs, verbatim). The reference agent runs it at tier 0 first: it must solve every figure task, or the ceiling is not
one. Where the real agent fails from the ceiling, no instruction text can make it pass under these knobs: the fault is
the folding or the agent. Per row: tier-1 success, mean peak, failure causes; ceiling minus each row, paired per task.
`--trigger` and `--keep` move the ceiling alone (the recorded rows stay as they ran): does a summary that misses
nothing do better when the middleware folds later, or keeps more messages unfolded? The sealed split is refused: a
diagnostic is method work.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_summary_instructions import (  # noqa: E402
    TIER1_SEED,
    episode_lines,
    figure_tasks,
    make_target,
    paired,
    tier0,
    tier1,
)

from optimizer import _offline  # noqa: E402,F401
from optimizer.config import ExperimentConfig, load_experiment  # noqa: E402
from optimizer.context.strategies import ContextStrategy, parse_strategy  # noqa: E402
from optimizer.evaluate.endpoints import ModelEndpoints  # noqa: E402
from optimizer.evaluate.strategy_runs import select_tasks, strategy_named  # noqa: E402
from optimizer.interrupts import run_main  # noqa: E402
from optimizer.search.evaluator import Evaluator  # noqa: E402
from optimizer.search.task_order import spread  # noqa: E402
from optimizer.stats import said_gap  # noqa: E402
from optimizer.summary.ceiling import LangChainSummaryCeiling  # noqa: E402
from optimizer.world.task import Task  # noqa: E402

TEXT_ROWS = ("default", "learned")


def rows_from(
    recorded: dict[str, Any], config: ExperimentConfig, ceiling_at: tuple[int, int] | None = None
) -> dict[str, ContextStrategy]:
    """The recorded run's tier-1 rows rebuilt as it ran them (the same content, hence the same stored runs), and
    the ceiling at `ceiling_at` (trigger, keep), the recorded knobs by default."""
    knobs = recorded["knobs"]
    tier1_rows = [name for name, row in recorded["rows"].items() if "tier1_success" in row]
    rows: dict[str, ContextStrategy] = {}
    for name in tier1_rows:
        base, _, at = name.partition("@")  # `default@2400`: the default text at trigger 2,400
        make = make_target("langchain", int(at or knobs["trigger"]), knobs["keep"], knobs["summary_max_tokens"])
        if name == "none":
            rows[name] = parse_strategy("none")
        elif base in TEXT_ROWS:
            rows[name] = make(recorded["texts"][base])
        else:
            rows[name] = strategy_named(config, name)
    trigger, keep = ceiling_at or (knobs["trigger"], knobs["keep"])
    rows["ceiling"] = LangChainSummaryCeiling(trigger_tokens=trigger, keep_messages=keep)
    return rows


def tier1_tasks_of(recorded: dict[str, Any], config: ExperimentConfig) -> list[Task]:
    train_all = spread(select_tasks(config, "train", None))
    learned_on = len(recorded["tasks"]["mine"]) + len(recorded["tasks"]["choose"])
    figure = figure_tasks(config, "val", train_all, learned_on, recorded["tasks"]["figure"])
    if [t.id for t in figure] != recorded["tasks"]["figure_ids"]:
        raise SystemExit("probe_summary_ceiling: the suite no longer gives the recorded figure tasks")
    return spread(figure)[: recorded["tier1"]["tasks"]]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="source", type=Path, required=True, help="a recorded bench JSON (val)")
    parser.add_argument("--config", type=Path, default=ROOT / "experiments" / "summary_reach_long.toml")
    parser.add_argument("--trigger", type=int, default=None, help="the ceiling's trigger (default: the recorded one)")
    parser.add_argument("--keep", type=int, default=None, help="the ceiling's keep (default: the recorded one)")
    parser.add_argument("--out", type=Path, default=None)
    return parser


def read_recorded(parser: argparse.ArgumentParser, source: Path) -> dict[str, Any]:
    """A recorded validation run of the LangChain target with tier-1 rows, else a one-line usage error."""
    try:
        recorded: dict[str, Any] = json.loads(source.read_text())
    except (OSError, ValueError) as error:
        parser.error(f"--from: {error}")
    if recorded.get("split") != "val" or recorded.get("target") != "langchain" or recorded.get("tier1") == "not run":
        parser.error("--from: a validation run of the LangChain target with --tier1 is needed")
    return recorded


def _recorded(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, Any]:
    recorded = read_recorded(parser, args.source)
    for flag in ("trigger", "keep"):
        if getattr(args, flag) is not None and getattr(args, flag) <= 0:
            parser.error(f"--{flag}: must be positive, got {getattr(args, flag)}")
    return recorded


def out_name(source: Path, knobs: dict[str, Any], trigger: int, keep: int) -> str:
    """The source's name, with the ceiling's knobs when they are not the recorded ones."""
    stem = source.stem.removeprefix("summary_instructions_")
    moved = (trigger, keep) != (knobs["trigger"], knobs["keep"])
    if moved:
        stem = f"{stem.removesuffix('_val')}_at{trigger}x{keep}_val"
    return f"summary_ceiling_{stem}.json"


def measure(
    config: ExperimentConfig, rows: dict[str, ContextStrategy], tasks: list[Task], seeds: int, runs: Path
) -> dict[str, dict[str, Any]]:
    """Each row's tier-1 figure: the recorded rows read back from `runs`, the ceiling run."""
    roles = {"agent": config.endpoints.agent, "compressor": config.endpoints.compressor}
    measured: dict[str, dict[str, Any]] = {}
    with ModelEndpoints(roles, log=lambda m: print(m, file=sys.stderr, flush=True)) as endpoints:
        evaluator = Evaluator(config, endpoints, runs, progress=episode_lines)
        for name, strategy in rows.items():
            measured[name] = tier1(evaluator, strategy, tasks, "train", seeds)
            print(
                f"  {name}: {measured[name]['tier1_success']:.2f} at {measured[name]['tier1_peak_mean']:.0f}",
                file=sys.stderr,
            )
    return measured


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    recorded = _recorded(parser, args)
    knobs = recorded["knobs"]
    trigger, keep = args.trigger or knobs["trigger"], args.keep or knobs["keep"]
    config = load_experiment(args.config).with_overrides(tracking={"enabled": False})
    tasks = tier1_tasks_of(recorded, config)
    rows = rows_from(recorded, config, (trigger, keep))
    seeds = recorded["tier1"]["seeds"]
    # The store under this checkout's results (the recorded path is the machine's it ran on).
    runs = ROOT / "benchmarks" / "results" / Path(recorded["tier1"]["runs"]).name
    out = args.out or ROOT / "benchmarks" / "results" / out_name(args.source, knobs, trigger, keep)
    started = time.perf_counter()
    ceiling_tier0 = tier0(rows["ceiling"], tasks, None)
    if not all(e.success for e in ceiling_tier0):
        failed = [e.task_id for e in ceiling_tier0 if not e.success]
        raise SystemExit(f"probe_summary_ceiling: the reference agent fails from the ceiling on {failed}: no ceiling")
    measured = measure(config, rows, tasks, seeds, runs)
    ids = [t.id for t in tasks]
    by_task = {name: [float(m["tier1_by_task"][i]) for i in ids] for name, m in measured.items()}
    report = {
        "benchmark": "summary_ceiling",
        "source": str(args.source),
        "knobs": knobs,
        "ceiling_knobs": {"trigger": trigger, "keep": keep},
        "tasks": ids,
        "tier1": {"seed": TIER1_SEED, "seeds": seeds, "runs": str(runs.relative_to(ROOT))},
        "ceiling_tier0": {"success": 1.0, "peak_mean": sum(e.metrics.peak_tokens for e in ceiling_tier0) / len(tasks)},
        "rows": measured,
        "paired": {f"ceiling-{n}": paired(by_task["ceiling"], by_task[n]) for n in measured if n != "ceiling"},
        "seconds": round(time.perf_counter() - started, 1),
    }
    out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(table(report))
    return 0


def table(report: dict[str, Any]) -> str:
    n = len(report["tasks"]) * report["tier1"]["seeds"]
    lines = [
        f"tier 1 from a summary that misses nothing, {len(report['tasks'])} validation tasks"
        f" x {report['tier1']['seeds']} seed(s), trigger {report['knobs']['trigger']}, keep {report['knobs']['keep']}"
        + _ceiling_at(report),
        "",
        *tier1_rows(report["rows"], n, report["paired"]),
    ]
    return "\n".join(lines)


def tier1_rows(rows: dict[str, dict[str, Any]], n: int, pairs: dict[str, dict[str, float]]) -> list[str]:
    """Each row's tier-1 success of `n` episodes, mean peak and failure causes as a table, then the paired
    intervals."""
    lines = ["| row | tier-1 success | tier-1 mean peak | failures by cause |", "|---|---|---|---|"]
    for name, row in rows.items():
        causes = ", ".join(f"{c} {k}" for c, k in row["tier1_failures"].items()) or "-"
        lines.append(
            f"| {name} | {round(row['tier1_success'] * n)} of {n} | {row['tier1_peak_mean']:,.0f} | {causes} |"
        )
    return [*lines, "", *(f"{pair}: {said_gap(p)}" for pair, p in pairs.items())]


def _ceiling_at(report: dict[str, Any]) -> str:
    at = report.get("ceiling_knobs")  # absent from a report written before the ceiling could move
    if at is None or (at["trigger"], at["keep"]) == (report["knobs"]["trigger"], report["knobs"]["keep"]):
        return ""
    return f" (the ceiling at trigger {at['trigger']}, keep {at['keep']})"


if __name__ == "__main__":
    run_main(main, "probe_summary_ceiling")
