"""Screenshots of a finished job in the MLflow UI (not part of CI): `acon ui` + headless Chromium.

    python experiments/scripts/ui_screenshots.py JOB_DIR [--out DIR] [--port N]
    python experiments/scripts/ui_screenshots.py --demo DIR     # first run a small scripted optimize job

Starts `acon ui JOB_DIR`, then saves PNGs of: the experiment's run list, the job run's overview, its
artifacts with the final Pareto plot, a failure-pair diff in the artifact viewer, the same diff page on
its own, and the traces list. Needs Debian's `chromium` (`apt-get install -y chromium`). `--demo` runs the
built-in suite through `acon optimize` with the scripted stand-in models (a real job, no real model).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--hide-scrollbars",
    "--window-size=1400,900",
    "--run-all-compositor-stages-before-draw",
]


def demo_job(directory: Path) -> Path:
    """A finished `acon optimize` job (two rounds, built-in suite, tier 0, scripted models) in `directory`."""
    from optimizer.config import load_experiment
    from optimizer.search.job import OptimizationJob
    from optimizer.testing.scripted import scripted_models
    from optimizer.testing.stub_server import StubServer
    from optimizer.tracking import tracker_for

    directory.mkdir(parents=True, exist_ok=True)
    with StubServer(scripted_models) as url:
        endpoint = f'base_url = "{url}"\nmodel = "scripted"\nbackoff_s = 0.0\n'
        config_path = directory / "demo.toml"
        config_path.write_text(
            "\n".join(
                [
                    'name = "ui-demo"',
                    f'out = "{directory / "job"}"',
                    '[suite]\ntype = "builtin"',
                    '[run]\nagent = "reference"',
                    "[optimize]",
                    "candidates = 1",
                    "diagnose = 1",
                    "train_limit = 6",
                    "test_limit = 6",
                    "[optimize.budget]",
                    "rounds = 2",
                    "[optimize.selection]",
                    "confirm_top = 0",
                    "[optimize.report]",
                    'final_strategies = ["none", "fifo"]',
                    "[endpoints.agent]",
                    endpoint,
                    "[endpoints.compressor]",
                    endpoint,
                    "[endpoints.optimizer]",
                    endpoint,
                ]
            )
        )
        config = load_experiment(config_path)
        job = OptimizationJob(config, log=lambda m: print(f"demo: {m}", file=sys.stderr))
        with tracker_for(job) as tracking:
            job.tracker = tracking
            job.run()
    return config.out_dir


def start_ui(job_dir: Path, port: int) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "optimizer", "ui", str(job_dir), "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    url = process.stdout.readline().strip()
    if not url.startswith("http"):
        process.kill()
        raise SystemExit(f"acon ui did not start (exit {process.wait()})")
    return process, url.split("/#/")[0]


def targets(job_dir: Path) -> dict[str, str]:
    """UI routes worth a screenshot, found through the MLflow client on the job's store."""
    from mlflow import MlflowClient

    from optimizer.tracking import resolve_uri
    from optimizer.tracking.parent_runs import ParentRuns

    state = ParentRuns.read(job_dir)
    if state is None:
        raise SystemExit(f"{job_dir}: no mlflow_run.json (was tracking on?)")
    uri = resolve_uri(job_dir)
    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    eid = state.experiment_id
    job_run = state.runs.get("optimize") or next(iter(state.runs.values()))
    pages = {
        "01-runs": f"#/experiments/{eid}/runs",
        "02-job-run": f"#/experiments/{eid}/runs/{job_run}",
        "03-job-artifacts-pareto": f"#/experiments/{eid}/runs/{job_run}/artifacts/pareto/final.png",
    }
    rounds = client.search_runs([eid], "tags.`acon.key` LIKE 'round/%'")
    for run in sorted(rounds, key=lambda r: r.data.tags["acon.key"]):
        diffs = [a.path for a in _walk(client, run.info.run_id, "pairs") if a.path.endswith(".html")]
        if diffs:
            rid, index = run.info.run_id, run.data.tags["acon.key"].removeprefix("round/")
            pages["04-failure-diff-in-ui"] = f"#/experiments/{eid}/runs/{rid}/artifacts/{diffs[0]}"
            # The server sends artifacts as downloads; the page itself is opened from the artifact store.
            if run.info.artifact_uri.startswith("file://"):
                pages["05-failure-diff-page"] = f"{run.info.artifact_uri}/{diffs[0]}"
            pages["06-round-pareto"] = f"#/experiments/{eid}/runs/{rid}/artifacts/pareto/r{index}.png"
            break
    pages["07-traces"] = f"#/experiments/{eid}/traces"
    traces = client.search_traces(
        locations=[eid], filter_string="tags.`acon.outcome` = 'failure'", max_results=1, include_spans=False
    )
    if traces:
        pages["08-failed-episode-trace"] = f"#/experiments/{eid}/traces?selectedEvaluationId={traces[0].info.trace_id}"
    return pages


def _walk(client, run_id: str, path: str):
    for item in client.list_artifacts(run_id, path):
        if item.is_dir:
            yield from _walk(client, run_id, item.path)
        else:
            yield item


def screenshot(chromium: str, url: str, out: Path, budget_ms: int) -> None:
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                chromium,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                f"--virtual-time-budget={budget_ms}",
                f"--screenshot={out}",
                url,
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("job_dir", type=Path, nargs="?", help="A finished job directory.")
    parser.add_argument("--demo", type=Path, help="Run a small scripted optimize job here first.")
    parser.add_argument("--out", type=Path, help="Where to save the PNGs (default: JOB_DIR/screenshots).")
    parser.add_argument("--port", type=int, default=0, help="Port for acon ui (default: a free one).")
    parser.add_argument("--budget-ms", type=int, default=20000, help="Chromium virtual time per page.")
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("chromium not found: apt-get install -y chromium")
    job_dir = demo_job(args.demo) if args.demo else args.job_dir
    if job_dir is None:
        parser.error("give JOB_DIR or --demo DIR")
    out = args.out or job_dir / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    pages = targets(job_dir)
    from optimizer.cli.ui_cmd import free_port

    process, base = start_ui(job_dir, args.port or free_port(0))
    try:
        for name, route in pages.items():
            started = time.monotonic()
            url = route if route.startswith("file://") else f"{base}/{route}"
            screenshot(chromium, url, out / f"{name}.png", args.budget_ms)
            print(f"{out / f'{name}.png'}  {url}  ({time.monotonic() - started:.0f}s)")
    finally:
        os.killpg(process.pid, signal.SIGINT)
        process.wait(60)


if __name__ == "__main__":
    main()
