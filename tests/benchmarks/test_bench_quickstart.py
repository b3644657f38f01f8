"""The fresh-machine quick-start benchmark times the README's own command, phase by phase."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT, benchmark_module


@pytest.fixture(scope="module")
def bench():
    yield from benchmark_module("bench_quickstart")


def test_the_timed_command_is_the_readmes_first_one_split_into_named_phases(bench):
    command = bench.readme_command((ROOT / "README.md").read_text())
    assert command.endswith("acon optimize experiments/quickstart.toml")
    names = [name for name, _ in bench.phases(command)]
    assert names == ["venv", "install", "setup", "main job"]
    assert " && ".join(step for _, step in bench.phases(command)) == command


def test_a_readme_without_a_quick_start_is_an_error(bench):
    with pytest.raises(ValueError, match="no quick-start command"):
        bench.readme_command("## Quick start\n\nnothing to paste\n")
