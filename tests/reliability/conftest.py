"""Shared helpers for the reliability tests: small optimize jobs on the built-in suite, scripted models."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, merged, optimize_toml
from tests.tracking.conftest import migrated_db as migrated_db  # one migrated MLflow store per session


def write_job(
    tmp: Path,
    url: str,
    *,
    name: str = "reliability",
    tracking: bool = False,
    suite: dict[str, Any] | None = None,
    endpoint: dict[str, Any] | None = None,
    guideline: Path | None = None,
    **optimize: Any,
) -> Path:
    """Write a tier-0 `acon optimize` config with every model role at `url`; returns the TOML path.

    The job directory is `<tmp>/job`. Traces are off: they are tested in tests/tracking and cost seconds.
    """
    settings = merged(
        {
            "train_limit": 4,
            "test_limit": 2,
            "budget": {"rounds": 1},
            "selection": {"confirm_top": 0},
            "report": {"final_strategies": ["none"]},
        },
        optimize,
    )
    role = {"base_url": url, "model": "scripted", "backoff_s": 0.0, **(endpoint or {})}
    lines = [
        f"name = {json.dumps(name)}",
        f"out = {json.dumps(str(tmp / 'job'))}",
        *([f"guideline = {json.dumps(str(guideline))}"] if guideline else []),
        "[suite]",
        *_table({"type": "builtin", **(suite or {})}),
        "[run]",
        'agent = "reference"',
        "[tracking]",
        f"enabled = {json.dumps(tracking)}",
        "traces = false",
        *optimize_toml(settings),
    ]
    for name_ in ("agent", "compressor", "optimizer"):
        lines += [f"[endpoints.{name_}]", *_table(role)]
    path = tmp / "job.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _table(values: dict[str, Any]) -> list[str]:
    return [f"{key} = {json.dumps(value)}" for key, value in values.items()]


def episode_lines(job: Path) -> dict[str, list[dict[str, Any]]]:
    """Every record of every run directory of a job, in the order written."""
    out = {}
    for path in sorted((job / "runs").glob("*/episodes.jsonl")):
        out[path.parent.name] = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return out


def eager_guideline(tmp: Path) -> Path:
    """The seed guideline with low thresholds: most tool results and histories go through the compressor."""
    text = (ROOT / "guidelines" / "seed" / "seed.md").read_text()
    text = text.replace("over: 2048", "over: 500").replace("over: 1024", "over: 120")
    assert "over: 500" in text and "over: 120" in text
    path = tmp / "eager.md"
    path.write_text(text)
    return path


HOLD = """
import sys, time
from pathlib import Path
from optimizer.locking import exclusive
with exclusive(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(600)
"""


def hold(directory: Path) -> subprocess.Popen:
    """Another process that holds `directory`'s lock until it is killed (the caller kills it)."""
    process = subprocess.Popen([sys.executable, "-c", HOLD, str(directory)], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "held"
    return process


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def fails(run_cli, tmp_path):
    """`fails(*argv, code=2, says=(...))`: run acon, expect one error line; nothing under tmp_path changes."""

    def check(*args: str, code: int = 2, says: tuple[str, ...] = ()) -> str:
        before = snapshot(tmp_path)
        exit_code, _, err = run_cli(*args)
        lines = [line for line in err.splitlines() if line.strip()]
        assert exit_code == code, err
        assert len(lines) == 1 and lines[0].startswith("acon: error: "), err
        for text in says:
            assert text in lines[0], lines[0]
        after = snapshot(tmp_path)
        assert {name: after.get(name) for name in before} == before  # nothing overwritten or lost
        return lines[0]

    return check
