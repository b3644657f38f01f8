"""`.ci/run` must fail when any step of the README's test command fails, not only the last one."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.test_readme import ci_command


def ci_script_running(tmp_path: Path, command: str) -> subprocess.CompletedProcess[str]:
    """Run a copy of `.ci/run` whose README command is replaced by `command`."""
    script = (ROOT / ".ci" / "run").read_text()
    assert ci_command() in script
    (tmp_path / ".ci").mkdir()
    ci = tmp_path / ".ci" / "run"
    ci.write_text(script.replace(ci_command(), command))
    shutil.copymode(ROOT / ".ci" / "run", ci)
    return subprocess.run(["bash", str(ci)], capture_output=True, text=True, cwd=tmp_path, timeout=60)


@pytest.mark.parametrize(
    "command",
    [
        "false && echo installed && echo tested",  # the install step fails
        "echo installed && false && echo tested",  # setup fails in the middle of the chain
        "echo installed && echo set-up && (exit 5)",  # pytest's "no tests ran"
    ],
)
def test_a_failing_step_fails_ci(tmp_path, command):
    done = ci_script_running(tmp_path, command)
    assert done.returncode != 0
    assert "ci: passed" not in done.stdout
    assert "ci: FAILED" in done.stderr
    assert "tested" not in done.stdout


def test_a_passing_chain_passes_ci(tmp_path):
    done = ci_script_running(tmp_path, "echo installed && echo tested")
    assert done.returncode == 0, done.stderr
    assert "tested" in done.stdout
    assert "ci: passed" in done.stdout
