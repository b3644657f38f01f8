"""Every compressing strategy the real agent has run, against full context on the same cells, by how deep it cut.

    python benchmarks/tier1_ledger.py RUNS_DIR [RUNS_DIR ...] [--out benchmarks/results/tier1_ledger.json]

A job's verdict rests on a few tier-1 episodes (4 validation tasks x 2 seeds); this pools what every stored
tier-1 run says, without running a model. A cell is one task and sampling seed where a strategy and full context
(`none`) both ran in the same RUNS_DIR (same agent, split and seed); test-split runs are never read. Per
strategy: cells, its successes and full context's on them, and its mean peak over full context's on the same
cells (the cut's depth). Per band of depth (at most 0.5 x full context's peak, the goal; up to 0.8 x; milder), the
pooled success of both and the paired difference with a bootstrap interval over cells. Prints the table, writes
JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.scan_variance import FULL, tier1_episodes  # noqa: E402
from optimizer.interrupts import run_main  # noqa: E402
from optimizer.stats import paired_bootstrap_diff, said_gap  # noqa: E402

INFRA = "infra_error"  # the server failed, not the agent: such an episode says nothing about either side
BANDS = ((0.5, "at most 0.5 x"), (0.8, "0.5 to 0.8 x"), (float("inf"), "above 0.8 x"))


@dataclass(frozen=True)
class Cell:
    source: str
    split: str
    seed: str
    strategy: str
    task_id: str
    passed: bool
    full_passed: bool
    peak: int
    full_peak: int


def cells(root: Path) -> list[Cell]:
    """Every (strategy, task, seed) of `root`'s tier-1 runs outside the sealed split that full context also ran."""
    out = []
    for (split, seed), by_strategy in sorted(tier1_episodes(root).items()):
        full = by_strategy.get(FULL, {})
        for strategy, episodes in sorted(by_strategy.items()):
            if strategy == FULL:
                continue
            for task_id, episode in sorted(episodes.items()):
                reference = full.get(task_id)
                if reference is None or INFRA in (episode.outcome, reference.outcome):
                    continue
                out.append(
                    Cell(
                        root.name,
                        split,
                        seed,
                        strategy,
                        task_id,
                        episode.success,
                        reference.success,
                        episode.metrics.peak_tokens,
                        reference.metrics.peak_tokens,
                    )
                )
    return out


def depth(group: Sequence[Cell]) -> float:
    """Mean peak over full context's mean peak on the same cells."""
    return statistics.fmean(c.peak for c in group) / statistics.fmean(c.full_peak for c in group)


def summary(group: Sequence[Cell]) -> dict:
    mean, low, high = paired_bootstrap_diff([c.passed for c in group], [c.full_passed for c in group])
    return {
        "cells": len(group),
        "passed": sum(c.passed for c in group),
        "full_passed": sum(c.full_passed for c in group),
        "depth": round(depth(group), 3),
        "difference": {"mean": round(mean, 3), "low": round(low, 3), "high": round(high, 3)},
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", type=Path, nargs="+", help="Directories of tier-1 run directories.")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "tier1_ledger.json")
    args = parser.parse_args(argv)
    missing = [str(r) for r in args.roots if not r.is_dir()]
    if missing:
        print(f"tier1_ledger: not a directory: {missing[0]}", file=sys.stderr)
        return 2
    found = [c for root in args.roots for c in cells(root)]
    if not found:
        print("tier1_ledger: no tier-1 cell that full context also ran", file=sys.stderr)
        return 1
    by_strategy: dict[str, list[Cell]] = defaultdict(list)
    for cell in found:
        by_strategy[cell.strategy].append(cell)
    strategies = {name: summary(group) for name, group in by_strategy.items()}
    print("| strategy | cells | passed | full context passed | peak x full context's |")
    print("|---|---|---|---|---|")
    for name, s in sorted(strategies.items(), key=lambda kv: kv[1]["depth"]):
        print(f"| {name} | {s['cells']} | {s['passed']} | {s['full_passed']} | {s['depth']:.2f} |")
    bands: dict[str, dict] = {}
    print("\n| depth (peak x full context's, per strategy) | strategies | cells | passed | full context | difference |")
    print("|---|---|---|---|---|---|")
    lower = 0.0
    for upper, label in BANDS:
        names = [n for n, s in strategies.items() if lower < s["depth"] <= upper]
        lower = upper
        group = [c for n in names for c in by_strategy[n]]
        if not group:
            continue
        s = summary(group) | {"strategies": sorted(names)}
        bands[label] = s
        d = s["difference"]
        print(f"| {label} | {len(names)} | {s['cells']} | {s['passed']} | {s['full_passed']} | {said_gap(d)} |")
    report = {
        "benchmark": "tier1_ledger",
        "roots": [str(r) for r in args.roots],
        "sealed_split_read": False,
        "strategies": strategies,
        "bands": bands,
        "cells": [asdict(c) for c in found],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    run_main(main, "tier1_ledger")
