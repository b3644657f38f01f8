"""The README's quick start and CI must not drift apart."""

from __future__ import annotations

from tests.conftest import ROOT


def ci_command() -> str:
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    marker = next(i for i, line in enumerate(lines) if "README-TEST-COMMAND" in line)
    return lines[marker + 1].strip()


def test_ci_runs_exactly_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    assert ci_command() in readme


def test_readme_quick_start_runs_the_main_job_on_the_embedded_default():
    readme = (ROOT / "README.md").read_text()
    assert ".venv/bin/acon setup && .venv/bin/acon" in readme
    assert "experiments/quickstart.toml" in readme


def test_both_readme_commands_install_through_the_pinned_constraints():
    readme = (ROOT / "README.md").read_text()
    commands = [line for line in readme.splitlines() if line.startswith("python3 -m venv .venv && ")]
    assert len(commands) == 2
    for command in commands:
        assert ".venv/bin/pip install -c constraints.txt -e " in command
    assert (ROOT / "constraints.txt").exists()
