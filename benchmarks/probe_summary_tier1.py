"""Instruction texts at tier 1 under a chosen summarizer: does a text the screen prefers help the real agent?

    python benchmarks/probe_summary_tier1.py --from benchmarks/results/summary_instructions_<...>_val.json
        --summarizer qwen2.5-coder-1.5b --text facts-by-call+contract --text default [--text NAME|NAME=FILE ...]
        [--config experiments/summary_reach_long.toml] [--tier0] [--seeds N]
        [--out benchmarks/results/summary_tier1_<...>_<MODEL>_val.json]

Reads a recorded validation run of `bench_summary_instructions.py` (LangChain target, with `--tier1`): its knobs,
tier-1 tasks, seeds and run store. The real agent (the config's `[endpoints.agent]`) runs those tasks under
LangChain's middleware at the recorded trigger and keep, the summaries written by `--summarizer` under each `--text`
(a layout probe text by name, `benchmarks/probe_summary_layout.py`, or `NAME=FILE`, a text from a file such as a
probe's child; `default` is LangChain's own prompt, read from the installed package), beside `none`, which calls no
summarizer and is read back from the store. The recorded run's own tier-1 rows are listed under the table as they
ran, with the recorded summarizer.
The screen and tier 0 rank texts by what the summaries keep for the reference agent; with the 1.5B summarizer on
train tasks the by-call text keeps more than facts first (12 of 25 facts against 9, tier 0 0.50 against 0.25). A
real agent reads a summary differently (it trusts invented values, re-calls what a summary lists), so this asks
it. Per row: tier-1 success, mean peak, failure causes; the first `--text` minus each other row, paired per task.
With `--tier0` the reference agent also runs each row on the same tasks, its summaries written by the same
summarizer (from acon's reply cache when present): tier-0 success and mean peak, the same pairs at tier 0, and per row
the tasks where the two tiers disagree, so that what tier 0 ranks and what the real agent does are read off one run.
`--seeds N` runs the real agent N times per task (sampling seeds from the recorded run's first; the stored ones read
back), each task's success its share over the seeds: one seed of ten tasks cannot separate 1 of 10 from 0 of 10.
The report is written after each row, and stored episodes are read back, so an interrupted run resumes. The sealed
split is refused: this is method work.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_summary_instructions import (  # noqa: E402
    TIER1_SEED,
    episode_lines,
    make_target,
    paired,
    restating,
    tier0,
    tier1,
)
from probe_summary_ceiling import read_recorded, tier1_rows, tier1_tasks_of  # noqa: E402
from probe_summary_layout import given_texts, texts  # noqa: E402

from optimizer import _offline  # noqa: E402,F401
from optimizer.agent.episode import Episode  # noqa: E402
from optimizer.config import ExperimentConfig, load_experiment  # noqa: E402
from optimizer.context.strategies import ContextStrategy, parse_strategy  # noqa: E402
from optimizer.evaluate.endpoints import ModelEndpoints  # noqa: E402
from optimizer.interrupts import run_main  # noqa: E402
from optimizer.search.evaluator import Evaluator  # noqa: E402
from optimizer.stats import said_gap  # noqa: E402
from optimizer.summary.knobs import Judged  # noqa: E402
from optimizer.world.task import Task  # noqa: E402


def _log(message: str) -> None:
    print(f"probe_summary_tier1: {message}", file=sys.stderr, flush=True)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="source", type=Path, required=True, help="a recorded bench JSON (val)")
    parser.add_argument("--summarizer", required=True, help="the summarizer model every text runs with")
    parser.add_argument(
        "--text",
        action="append",
        required=True,
        metavar="NAME|NAME=FILE",
        help="a layout probe text, or a text from a file under a name (first: the candidate)",
    )
    parser.add_argument("--config", type=Path, default=ROOT / "experiments" / "summary_reach_long.toml")
    parser.add_argument("--tier0", action="store_true", help="also run the reference agent on each row's summaries")
    parser.add_argument(
        "--seeds",
        type=int,
        default=None,
        help="sampling seeds of the real agent per task, from the recorded first (default: the recorded run's)",
    )
    parser.add_argument("--out", type=Path, default=None)
    return parser


def _checked(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, str]]:
    """The recorded run, read and checked, and the texts asked for, read and checked, before any model starts."""
    known = texts()
    unknown = [spec for spec in args.text if "=" not in spec and spec not in known]
    if args.seeds is not None and not 1 <= args.seeds <= 5:
        parser.error(f"--seeds: must be 1 to 5, got {args.seeds}")
    if unknown:
        parser.error(f"--text: no layout probe text {', '.join(map(repr, unknown))}; known: {', '.join(known)}")
    names = [spec.partition("=")[0] for spec in args.text]
    if len(set(names)) != len(names):
        parser.error("--text: a text is named twice")
    try:
        given, _ = given_texts([spec for spec in args.text if "=" in spec], None)
    except SystemExit as unreadable:
        parser.error(str(unreadable).removeprefix("probe_summary_layout: "))
    clashing = sorted(set(given) & set(known))
    if clashing:
        parser.error(f"--text: {', '.join(map(repr, clashing))} names a layout probe text; give the file another name")
    return read_recorded(parser, args.source), {name: given.get(name) or known[name] for name in names}


def rows_for(recorded: dict[str, Any], chosen: Mapping[str, str]) -> dict[str, ContextStrategy]:
    """`none`, then each text under the middleware at the recorded knobs."""
    knobs = recorded["knobs"]
    make = make_target("langchain", knobs["trigger"], knobs["keep"], knobs["summary_max_tokens"])
    return {"none": parse_strategy("none"), **{name: make(text) for name, text in chosen.items()}}


def out_name(source: Path, summarizer: str) -> str:
    stem = source.stem.removeprefix("summary_instructions_").removesuffix("_val")
    return f"summary_tier1_{stem}_{summarizer}_val.json"


def recorded_rows(recorded: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The recorded run's tier-1 rows as it ran them (its summarizer): context, not paired with this run's."""
    return {
        name: {key: row[key] for key in ("tier1_success", "tier1_peak_mean", "tier1_episodes")}
        for name, row in recorded["rows"].items()
        if "tier1_success" in row
    }


def report_of(
    recorded: dict[str, Any],
    source: Path,
    summarizer: str,
    config: ExperimentConfig,
    tasks: Sequence[Task],
    runs: Path,
    measured: dict[str, dict[str, Any]],
    candidate: str,
    started: float,
    chosen: Mapping[str, str] | None = None,
    seeds: int | None = None,
) -> dict[str, Any]:
    ids = [t.id for t in tasks]

    def pairs(tier: str) -> dict[str, dict[str, float]]:
        key = f"{tier}_by_task"
        by_task = {name: [float(m[key][i]) for i in ids] for name, m in measured.items() if key in m}
        if candidate not in by_task:
            return {}
        return {
            f"{candidate}-{name}": paired(by_task[candidate], by_task[name]) for name in by_task if name != candidate
        }

    return {
        "benchmark": "summary_tier1",
        "source": str(source),
        "split": "val",
        "knobs": recorded["knobs"],
        "summarizer": summarizer,
        "agent": config.endpoints.agent.model,
        "tasks": ids,
        "tier1": {
            "seed": TIER1_SEED,
            "seeds": seeds or recorded["tier1"]["seeds"],
            "runs": str(runs.relative_to(ROOT)),
        },
        "texts": {name: (chosen or texts())[name] for name in measured if name != "none"},
        "rows": measured,
        "paired": pairs("tier1"),
        "paired_tier0": pairs("tier0"),
        "recorded": {
            "summarizer": recorded.get("summarizer"),
            "seeds": recorded["tier1"]["seeds"],
            "rows": recorded_rows(recorded),
        },
        "seconds": round(time.perf_counter() - started, 1),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    recorded, chosen = _checked(parser, args)
    config = load_experiment(args.config).with_overrides(
        tracking={"enabled": False}, endpoints={"compressor": {"model": args.summarizer}}
    )
    tasks = tier1_tasks_of(recorded, config)
    rows = rows_for(recorded, chosen)
    candidate = next(iter(chosen))
    seeds = args.seeds or recorded["tier1"]["seeds"]
    # The store under this checkout's results (the recorded path is the machine's it ran on).
    runs = ROOT / "benchmarks" / "results" / Path(recorded["tier1"]["runs"]).name
    out = args.out or ROOT / "benchmarks" / "results" / out_name(args.source, args.summarizer)
    started = time.perf_counter()
    measured: dict[str, dict[str, Any]] = {}
    roles = {"agent": config.endpoints.agent, "compressor": config.endpoints.compressor}
    with ModelEndpoints(roles, log=_log) as endpoints:
        evaluator = Evaluator(config, endpoints, runs, progress=episode_lines)
        compressor = endpoints.compressors(1)[0]
        for name, strategy in rows.items():
            measured[name] = tier1(evaluator, strategy, tasks, "train", seeds)
            if args.tier0:
                measured[name] |= tier0_part(tier0(strategy, tasks, compressor))
            _log(f"{name}: {measured[name]['tier1_success']:.2f} at {measured[name]['tier1_peak_mean']:.0f}")
            # After each row: a row takes half an hour with a 1.5B summarizer, and a killed run keeps what it had.
            report = report_of(
                recorded, args.source, args.summarizer, config, tasks, runs, measured, candidate, started, chosen, seeds
            )
            out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(table(report))
    return 0


def tier0_part(episodes: Sequence[Episode]) -> dict[str, Any]:
    """A row's tier-0 figures, keyed apart from its tier-1 ones."""
    judged = Judged.of([e.success for e in episodes], [e.metrics.peak_tokens for e in episodes])
    return {
        "tier0_success": judged.success,
        "tier0_peak_mean": judged.peak,
        "tier0_by_task": {e.task_id: float(e.success) for e in episodes},
        **restating("tier0", episodes),
    }


def _restating_lines(rows: dict[str, dict[str, Any]]) -> list[str]:
    """Per row, its summaries that were the task statement again with no result, at each tier it ran (reports
    written before the count have none)."""
    said = {
        name: [
            f"{tier} {row[f'{tier}_restating']} of {row[f'{tier}_summaries']}"
            for tier in ("tier1", "tier0")
            if f"{tier}_restating" in row
        ]
        for name, row in rows.items()
        if row.get("tier1_summaries") or row.get("tier0_summaries")
    }
    if not said:
        return []
    lines = [f"  {name}: {', '.join(tiers)}" for name, tiers in said.items()]
    return ["", "summaries restating the task (no result in them):", *lines]


def _tier0_lines(report: dict[str, Any]) -> list[str]:
    """Each row at tier 0 beside tier 1 on the same tasks, and the tasks where the tiers disagree."""
    rows = {name: row for name, row in report["rows"].items() if "tier0_by_task" in row}
    if not rows:
        return []
    lines = ["", "tier 0 (the reference agent) on the same tasks and summarizer:"]
    for name, row in rows.items():
        split = [t for t in report["tasks"] if row["tier0_by_task"][t] != row["tier1_by_task"][t]]
        lines.append(
            f"  {name}: tier 0 {row['tier0_success']:.2f} at {row['tier0_peak_mean']:,.0f}, tier 1 "
            f"{row['tier1_success']:.2f}; the tiers disagree on {len(split)} of {len(report['tasks'])} tasks"
        )
    pairs = report.get("paired_tier0", {})
    return lines + [f"  {pair}: {said_gap(p)}" for pair, p in pairs.items()]


def table(report: dict[str, Any]) -> str:
    n = len(report["tasks"]) * report["tier1"]["seeds"]
    knobs = report["knobs"]
    lines = [
        f"tier 1, {len(report['tasks'])} validation tasks x {report['tier1']['seeds']} seed(s), trigger "
        f"{knobs['trigger']}, keep {knobs['keep']}, summarizer {report['summarizer']}, agent {report['agent']}",
        "",
        *tier1_rows(report["rows"], n, report["paired"]),
        *_restating_lines(report["rows"]),
        *_tier0_lines(report),
    ]
    earlier = report["recorded"]
    lines.append(f"\nrecorded run, summarizer {earlier['summarizer']}, same tasks, its seeds:")
    lines += [
        f"  {name}: {round(row['tier1_success'] * row['tier1_episodes'])} of {row['tier1_episodes']} at "
        f"{row['tier1_peak_mean']:,.0f}"
        for name, row in earlier["rows"].items()
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    run_main(main, "probe_summary_tier1")
