"""The README's quick start on a fresh machine, timed by phase: what a newcomer waits for.

    python benchmarks/bench_quickstart.py [--workdir DIR] [--out benchmarks/results/quickstart_fresh.json]

Clones this repository into `--workdir` and runs the README's first quick-start command there, split at its
`&&` into phases (venv, install, setup, the main job) and each timed, with what makes a machine fresh: an
empty `ACON_HOME` (so `acon setup` builds llama-server and fetches both models) and no pip cache. The
command is read from the README, so what is timed is what a newcomer pastes. Prints a table and writes
JSON; a failing phase stops the run with its last output lines and a non-zero exit. Run it on an idle
machine: other work on the 2 cores shows up in every phase.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from optimizer.interrupts import run_main  # noqa: E402

# Most specific first: every step after the first runs a program out of `.venv`.
PHASE_NAMES = {"acon optimize": "main job", "acon setup": "setup", "pip install": "install", "-m venv": "venv"}


def readme_command(readme: str) -> str:
    """The first command of the README's quick start (the one that installs and runs the main job)."""
    section = readme.split("## Quick start", 1)[1]
    match = re.search(r"```bash\n(.+?)\n```", section)
    if match is None:
        raise ValueError("README.md has no quick-start command")
    return match.group(1).strip()


def phases(command: str) -> list[tuple[str, str]]:
    """(name, command) for each `&&` step, named by what it runs."""
    out = []
    for step in (s.strip() for s in command.split("&&")):
        name = next((label for key, label in PHASE_NAMES.items() if key in step), step.split()[0])
        out.append((name, step))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, default=None, help="Where to clone (default: a new temp dir).")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "quickstart_fresh.json")
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="acon-quickstart-"))
    clone, home = workdir / "acon", workdir / "acon_home"
    if clone.exists() or home.exists():
        print(f"bench_quickstart: {workdir} is not empty; give a new --workdir", file=sys.stderr)
        return 2
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    env = {**os.environ, "ACON_HOME": str(home), "PIP_NO_CACHE_DIR": "1"}
    env.pop("VIRTUAL_ENV", None)
    command = readme_command((clone / "README.md").read_text())
    rows: list[dict[str, Any]] = []
    for name, step in phases(command):
        print(f"{time.strftime('%H:%M:%S')} {name}: {step}", file=sys.stderr, flush=True)
        started = time.perf_counter()
        done = subprocess.run(step, shell=True, cwd=clone, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - started
        rows.append({"phase": name, "command": step, "seconds": round(seconds, 1), "exit": done.returncode})
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).splitlines()[-15:])
            print(f"bench_quickstart: {name} failed (exit {done.returncode}):\n{tail}", file=sys.stderr)
            return 1
    report = {
        "benchmark": "quickstart_fresh",
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "command": command,
        "phases": rows,
        "total_seconds": round(sum(r["seconds"] for r in rows), 1),
    }
    print("| phase | minutes |")
    print("|---|---|")
    for row in rows:
        print(f"| {row['phase']} | {row['seconds'] / 60:.1f} |")
    print(f"| **total** | **{report['total_seconds'] / 60:.1f}** |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")
    if args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    run_main(main, "bench_quickstart")
