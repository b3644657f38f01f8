"""The README's quick start and CI must not drift apart."""

from __future__ import annotations

import re
import tomllib

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


def _toml_blocks(readme: str) -> list[str]:
    return re.findall(r"```toml\n(.*?)```", readme, re.S)


def test_every_toml_block_in_the_readme_parses():
    blocks = _toml_blocks((ROOT / "README.md").read_text())
    assert blocks
    for block in blocks:
        tomllib.loads(block)


def test_the_summary_target_block_with_every_knob_uncommented_is_a_valid_config(tmp_path):
    """A reader uncomments what the README offers; each knob must be one the target takes, with a value it takes."""
    from optimizer.config import load_experiment

    block = next(b for b in _toml_blocks((ROOT / "README.md").read_text()) if b.startswith("[optimize.target]"))
    uncommented = re.sub(r"^# (\w+ = )", r"\1", block, flags=re.M)
    assert uncommented != block  # the block offers knobs to uncomment
    base = (ROOT / "experiments" / "summary_reach_long.toml").read_text()
    before, _, after = base.partition("[optimize.target]")
    rest = after[after.index("\n[", 1) :]
    path = tmp_path / "readme_target.toml"
    path.write_text(before + uncommented + rest)
    target = load_experiment(path).optimize.target
    assert target is not None and target.default_triggers == (2400, 2500) and target.max_peak_tokens == "default"
