"""Where an optimize job's wall time went, by phase, and tier-1 episodes per hour, read from its directory.

    python benchmarks/bench_job_phases.py JOB_DIR [--out benchmarks/results/job_phases.json]

Each stored run (`JOB_DIR/runs/*/`) is one evaluation: its agent says the tier (`reference` is tier 0, any
other agent tier 1) and its split the phase (tier 1: `train` mines pairs, `val` confirms, `test` is the
final report's rows; tier 0: `train`/`val` screen, `test` reports). A run's wall time is from its
`meta.json` (written when it starts) to its `episodes.jsonl` (appended as each episode ends); runs of a job
are sequential, so the phases add up to the job's time spent in episodes. What is left of the job's
`wall_s` (its `state.json`) is the search itself: proposing, validating, diffing, tracking. Tier-1 episodes
per hour are counted over tier-1 wall time only. File times are what this reads, so run it on the job's own
directory, not on a copy.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from optimizer.interrupts import run_main  # noqa: E402

PHASES = {
    ("tier 0", "train"): "tier 0: screen (train)",
    ("tier 0", "val"): "tier 0: choose (validation)",
    ("tier 0", "test"): "tier 0: report (test)",
    ("tier 1", "train"): "tier 1: mine pairs (train)",
    ("tier 1", "val"): "tier 1: confirm (validation)",
    ("tier 1", "test"): "tier 1: report (test)",
}


def phases(job: Path) -> dict[str, Any]:
    rows: dict[str, dict[str, float]] = defaultdict(lambda: {"runs": 0, "episodes": 0, "seconds": 0.0})
    for meta_path in sorted((job / "runs").glob("*/meta.json")):
        episodes_path = meta_path.parent / "episodes.jsonl"
        if not episodes_path.exists():
            continue
        meta = json.loads(meta_path.read_text())
        tier = "tier 0" if meta.get("agent") == "reference" else "tier 1"
        phase = PHASES.get((tier, meta.get("split", "")), f"{tier}: {meta.get('split')}")
        row = rows[phase]
        row["runs"] += 1
        row["episodes"] += sum(1 for line in episodes_path.read_text().splitlines() if line.strip())
        row["seconds"] += max(0.0, episodes_path.stat().st_mtime - meta_path.stat().st_mtime)
    state_path = job / "state.json"
    job_seconds = json.loads(state_path.read_text()).get("wall_s") if state_path.exists() else None
    tier1 = [r for name, r in rows.items() if name.startswith("tier 1")]
    tier1_seconds = sum(r["seconds"] for r in tier1)
    tier1_episodes = sum(r["episodes"] for r in tier1)
    return {
        "benchmark": "job_phases",
        "date": time.strftime("%Y-%m-%d"),
        "job": str(job),
        "phases": {name: rows[name] for name in sorted(rows)},
        "episode_seconds": sum(r["seconds"] for r in rows.values()),
        "job_seconds": job_seconds,
        "tier1_episodes": tier1_episodes,
        "tier1_episodes_per_hour": 3600 * tier1_episodes / tier1_seconds if tier1_seconds else None,
    }


def _minutes(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 60:.1f}"


def print_report(report: dict[str, Any]) -> None:
    print("| phase | runs | episodes | minutes |")
    print("|---|---|---|---|")
    for name, row in report["phases"].items():
        print(f"| {name} | {row['runs']} | {row['episodes']} | {_minutes(row['seconds'])} |")
    job = report["job_seconds"]
    rest = None if job is None else job - report["episode_seconds"]
    print(f"| search (proposers, diffs, tracking) | | | {_minutes(rest)} |")
    print(f"| **job** | | | **{_minutes(job)}** |")
    rate = report["tier1_episodes_per_hour"]
    print(f"\ntier-1 episodes per hour of tier-1 wall time: {'-' if rate is None else f'{rate:.1f}'}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("job", type=Path, help="An `acon optimize` job directory.")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "job_phases.json")
    args = parser.parse_args(argv)
    if not (args.job / "runs").is_dir():
        print(f"bench_job_phases: {args.job} is not a job directory (no runs/)", file=sys.stderr)
        return 1
    try:
        report = phases(args.job)
    except (OSError, json.JSONDecodeError) as exc:
        print(f"bench_job_phases: {exc}", file=sys.stderr)
        return 1
    print_report(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    run_main(main, "bench_job_phases")
