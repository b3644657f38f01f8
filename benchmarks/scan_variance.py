"""How many of the real agent's failures under compression are its own sampling, from stored tier-1 episodes.

    python benchmarks/scan_variance.py RUNS_DIR [RUNS_DIR ...] [--out benchmarks/results/tier1_variance.json]

Each RUNS_DIR holds run directories (`*-llm-*`, as an optimize job's `runs/` or a tier-1 benchmark's). Cells
pair a compressing strategy's episode with full context's on the same task, split and sampling seed, where
full context passed and the strategy failed. A cell whose two episodes first acted differently at an identical
request (the messages as sent, system prompt first) is the agent's own variance: compression had not changed
anything it saw (`optimizer.mining.causes.parted_at_identical_request`). Test-split runs are never read.
Prints a table per strategy and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from optimizer.agent.episode import Episode  # noqa: E402
from optimizer.evaluate.store import EpisodeStore, read_meta  # noqa: E402
from optimizer.interrupts import run_main  # noqa: E402
from optimizer.mining.causes import parted_at_identical_request  # noqa: E402

SEALED = "test"
FULL = "none"


@dataclass(frozen=True)
class Cell:
    source: str
    split: str
    seed: str
    strategy: str
    task_id: str
    variance: bool


def tier1_episodes(root: Path) -> dict[tuple[str, str], dict[str, dict[str, Episode]]]:
    """(split, seed) -> strategy -> task id -> its episode, for every tier-1 run outside the sealed split."""
    out: dict[tuple[str, str], dict[str, dict[str, Episode]]] = defaultdict(dict)
    for directory in sorted(root.glob("*-llm-*")):
        meta = read_meta(directory)
        if not meta or meta.get("split") == SEALED:
            continue
        seed = str(((meta.get("endpoints") or {}).get("agent") or {}).get("seed"))
        episodes = {e.task_id: e for e in EpisodeStore(directory).load()}
        out[(str(meta.get("split")), seed)].setdefault(str(meta["strategy"]), {}).update(episodes)
    return out


def cells(root: Path) -> list[Cell]:
    out = []
    for (split, seed), by_strategy in tier1_episodes(root).items():
        full = by_strategy.get(FULL, {})
        for strategy, episodes in sorted(by_strategy.items()):
            if strategy == FULL:
                continue
            for task_id, compressed in sorted(episodes.items()):
                reference = full.get(task_id)
                if reference is None or not reference.success or compressed.success:
                    continue
                variance = parted_at_identical_request(reference, compressed)
                out.append(Cell(root.name, split, seed, strategy, task_id, variance))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", type=Path, nargs="+", help="Directories of tier-1 run directories.")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "tier1_variance.json")
    args = parser.parse_args(argv)
    missing = [str(r) for r in args.roots if not r.is_dir()]
    if missing:
        print(f"scan_variance: not a directory: {missing[0]}", file=sys.stderr)
        return 2
    found = [c for root in args.roots for c in cells(root)]
    by_strategy: dict[str, list[Cell]] = defaultdict(list)
    for cell in found:
        by_strategy[cell.strategy].append(cell)
    print("| strategy | failures where full context passed | of them, the agent's own variance |")
    print("|---|---|---|")
    for strategy, mine in sorted(by_strategy.items()):
        print(f"| {strategy} | {len(mine)} | {sum(c.variance for c in mine)} |")
    total, variance = len(found), sum(c.variance for c in found)
    print(f"\n{variance} of {total} failures parted from full context at an identical request")
    report = {"benchmark": "tier1_variance", "roots": [str(r) for r in args.roots], "failures": total}
    report |= {"variance": variance, "cells": [asdict(c) for c in found]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    run_main(main, "scan_variance")
