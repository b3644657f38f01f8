"""The wheel is self-contained: built from the checkout, installed into a fresh virtualenv outside it, it
runs `acon optimize` on the smoke suite and the README's runtime example with its packaged guidelines.

The models are the project's stub server, started by this test; nothing from the checkout is importable
in the fresh environment (its imports are checked to come from the new site-packages).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from optimizer.testing.scripted import scripted_models
from tests.conftest import ROOT
from tests.runtime.test_readme_example import EXAMPLE_URL, check_run, readme_example, scripted_agent


def run(*args: str | Path, cwd: Path, timeout: int = 900) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{args}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


def test_wheel_installed_outside_the_checkout_optimizes_and_runs_the_runtime_example(tmp_path, stub):
    dist = tmp_path / "dist"
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", ".", "-w", dist, cwd=ROOT)
    wheel = next(dist.glob("acon-*.whl"))
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    run(python, "-m", "pip", "install", "-q", "-c", ROOT / "constraints.txt", wheel, cwd=tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    where = run(python, "-c", "import optimizer, tasks; print(optimizer.__file__); print(tasks.__file__)", cwd=work)
    assert all(line.startswith(str(venv)) for line in where.stdout.split()), where.stdout

    server = stub(scripted_models)
    endpoint = f'base_url = "{server.base_url}"\nmodel = "scripted"\nbackoff_s = 0.0\n'
    (work / "smoke.toml").write_text(
        "\n".join(
            [
                'name = "wheel-smoke"',
                f'out = "{work / "job"}"',
                "[suite]",
                'type = "smoke"',
                "[run]",
                'agent = "reference"',
                "[optimize.budget]",  # the seed: packaged default
                "rounds = 1",
                "[optimize.selection]",
                "confirm_top = 0",
                "[endpoints.agent]",
                endpoint,
                "[endpoints.compressor]",
                endpoint,
                "[endpoints.optimizer]",
                endpoint,
            ]
        )
    )
    done = run(venv / "bin" / "acon", "optimize", "smoke.toml", cwd=work)
    assert "Test split" in done.stdout
    report = json.loads((work / "job" / "report.json").read_text())
    assert report["chosen"]["path"].endswith(".md") and report["rows"]

    agent = stub(scripted_agent(scripted_models))
    script = work / "example.py"
    report_back = "\nprint(json.dumps({'messages': messages, 'stats': runtime.stats.to_dict()}))\n"
    script.write_text(readme_example().replace(EXAMPLE_URL, agent.base_url) + report_back)
    out = json.loads(run(python, script, cwd=work).stdout.strip().splitlines()[-1])
    namespace = {"messages": out["messages"], "docs": {"refunds": _example_doc()}, "runtime": _Stats(out["stats"])}
    check_run(agent, namespace)


def _example_doc() -> str:
    # The doc is built over several top-level lines (the notes, then the doc around them).
    namespace: dict = {}
    for line in readme_example().splitlines():
        if line.startswith(("faq = ", "docs = ")):
            exec(line, namespace)
    return namespace["docs"]["refunds"]


class _Stats:
    """The runtime's counters as the example printed them in the other interpreter."""

    def __init__(self, stats: dict) -> None:
        self.stats = type("Stats", (), stats)
