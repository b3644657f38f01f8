"""What MLflow tracing costs an optimize job: the same tier-0 job under `[tracking] traces = all` and `reviewed`.

A py-spy sample of a reach_long job found most of its time outside runs waiting on the trace export (every
tier-0 screen's episodes traced to the sqlite store, and every pair's tagging flushing that queue first). This
runs one small job twice, identical but for the trace mode, each in a fresh directory with a fresh store, and
reports the job's wall time, its episodes and the traces it wrote. Every model role is the scripted stub
server, so the job's own work is cheap and what differs is tracking; train and validation tasks only (the
report's rows run on test tasks, as any job's do).

    python benchmarks/bench_trace_modes.py                       # reach_long, 24 train tasks, 2 rounds
    python benchmarks/bench_trace_modes.py --train-limit 12 --rounds 1
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from optimizer import _offline  # noqa: E402,F401
from optimizer.config import load_experiment  # noqa: E402
from optimizer.errors import AconError  # noqa: E402
from optimizer.interrupts import run_main  # noqa: E402
from optimizer.search.job import OptimizationJob  # noqa: E402
from optimizer.testing.scripted import scripted_models  # noqa: E402
from optimizer.testing.stub_server import StubServer  # noqa: E402
from optimizer.tracking import resolve_uri, tracker_for  # noqa: E402

MODES = ("all", "reviewed")


def job_toml(out: Path, url: str, mode: str, suite: str, train_limit: int, rounds: int) -> str:
    endpoint = f'base_url = "{url}"\nmodel = "scripted"\nbackoff_s = 0.0\n'
    return "\n".join(
        [
            f'name = "trace-modes-{mode}"',
            f'out = "{out}"',
            f'[suite]\ntype = "{suite}"',
            '[run]\nagent = "reference"',
            f'[tracking]\nexperiment = "trace-modes"\ntraces = "{mode}"',
            f"[optimize]\ntrain_limit = {train_limit}\ntest_limit = 8",
            f"[optimize.budget]\nrounds = {rounds}",
            "[optimize.selection]\nconfirm_top = 0",
            '[optimize.report]\nfinal_strategies = ["none", "fifo"]',
            *(f"[endpoints.{role}]\n{endpoint}" for role in ("agent", "compressor", "optimizer")),
        ]
    )


def measure(mode: str, root: Path, url: str, args: argparse.Namespace) -> dict[str, Any]:
    from mlflow import MlflowClient

    path = root / f"{mode}.toml"
    path.write_text(job_toml(root / mode, url, mode, args.suite, args.train_limit, args.rounds))
    config = load_experiment(path)
    started = time.perf_counter()
    OptimizationJob(config, log=lambda m: None).run(track=lambda: tracker_for(config))
    seconds = time.perf_counter() - started
    client = MlflowClient(tracking_uri=resolve_uri(config.out_dir))
    experiment = client.get_experiment_by_name("trace-modes")
    traces, token = 0, None
    while True:
        page = client.search_traces(locations=[experiment.experiment_id], max_results=500, page_token=token)
        traces += len(page)
        token = page.token
        if not token:
            break
    episodes = sum(
        sum(1 for line in (d / "episodes.jsonl").read_text().splitlines() if line)
        for d in (config.out_dir / "runs").iterdir()
        if (d / "episodes.jsonl").exists()
    )
    return {"mode": mode, "job_seconds": round(seconds, 1), "episodes": episodes, "traces": traces}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="reach_long")
    parser.add_argument("--train-limit", type=int, default=24)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "trace_modes.json")
    parser.add_argument("--one", choices=MODES, help=argparse.SUPPRESS)  # a single mode, in its own process
    parser.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(measure(args.one, args.dir, args.url, args)))
        return 0
    rows = []
    with StubServer(scripted_models) as url, tempfile.TemporaryDirectory() as tmp:
        for mode in MODES:
            # MLflow's tracking URI is process-wide: each job gets its own process, as `acon optimize` does.
            command = [sys.executable, __file__, "--one", mode, "--dir", tmp, "--url", url]
            command += ["--suite", args.suite, "--train-limit", str(args.train_limit), "--rounds", str(args.rounds)]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise AconError(f"the {mode} job failed: {done.stderr.strip().splitlines()[-1:]}")
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(f"bench_trace_modes: {mode} done in {rows[-1]['job_seconds']:.0f} s", file=sys.stderr, flush=True)
    base = rows[0]["job_seconds"]
    print(f"{'traces':<10}{'job s':>9}{'x all':>8}{'episodes':>10}{'traces':>8}")
    for row in rows:
        row["vs_all"] = round(row["job_seconds"] / base, 3) if base else None
        print(
            f"{row['mode']:<10}{row['job_seconds']:>9.1f}{row['vs_all']:>8.2f}{row['episodes']:>10}{row['traces']:>8}"
        )
    result = {
        "benchmark": "trace_modes",
        "date": time.strftime("%Y-%m-%d"),
        "machine": platform.platform(),
        "suite": args.suite,
        "train_limit": args.train_limit,
        "rounds": args.rounds,
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    run_main(main, "bench_trace_modes")
