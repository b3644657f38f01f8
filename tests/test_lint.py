"""Style is part of the build: ruff's linter and formatter must pass on the whole tree."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT

TREE = ["optimizer", "tasks", "tests", "benchmarks", "experiments"]


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["check", "format"])
def test_ruff_is_clean(command):
    result = subprocess.run([sys.executable, "-m", "ruff", *command, *TREE], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-1000:]
