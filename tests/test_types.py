"""Types are part of the build: mypy must pass on the package, as configured in pyproject.toml (a base level
everywhere, `--strict`'s checks on `optimizer.context`, `optimizer.report` and `optimizer.search`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

UNTYPED = "def untyped(x):\n    return x\n"


def mypy(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)


def test_mypy_is_clean():
    # The cache (.mypy_cache, gitignored) makes a rerun take seconds; a clean checkout checks from scratch.
    result = mypy(cwd=ROOT)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]


def test_only_context_report_and_search_are_strict(tmp_path):
    """`strict = true` in a mypy override turns the strict flags on for every module; the config spells
    them out instead. An untyped function fails in the strict packages and passes elsewhere."""
    for package in ("optimizer/context", "optimizer/report", "optimizer/search", "optimizer/llm"):
        (tmp_path / package).mkdir(parents=True)
        (tmp_path / package / "__init__.py").write_text("")
        (tmp_path / package / "probe.py").write_text(UNTYPED)
    (tmp_path / "optimizer" / "__init__.py").write_text("")
    result = mypy("--cache-dir", str(tmp_path / "cache"), "optimizer", cwd=tmp_path)
    flagged = {line.split(":")[0] for line in result.stdout.splitlines() if "[no-untyped-def]" in line}
    strict = {"optimizer/context/probe.py", "optimizer/report/probe.py", "optimizer/search/probe.py"}
    assert flagged == strict, result.stdout + result.stderr
