"""Installs that do not drift: the pins in constraints.txt, the ranges in pyproject.toml, and the installed
versions agree, and the CLI's error path works with what is installed."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tasks.bfcl.install import REQUIREMENTS
from tests.conftest import ROOT


def pins() -> dict[str, str]:
    found = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not NAME==VERSION"
            found[canonicalize_name(name)] = version.strip()
    return found


def test_constraints_leave_out_acon_and_what_setup_pins_itself():
    setup_pinned = {canonicalize_name(Requirement(args[-1]).name) for args in REQUIREMENTS}
    assert setup_pinned == {"bfcl-eval", "mpmath"}
    assert not ({"acon", *setup_pinned} & pins().keys())


def test_installed_versions_are_the_pinned_ones():
    """Fails after an upgrade in the venv that the pins do not record: reinstall with -c, or refresh them."""
    drifted = []
    for name, version in pins().items():
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue  # a platform-specific pin
        if installed != version:
            drifted.append(f"{name} {installed} (pinned {version})")
    assert not drifted, "installed versions differ from constraints.txt: " + ", ".join(drifted)


def test_the_pins_satisfy_the_declared_ranges():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = [*project["dependencies"], *project["optional-dependencies"]["test"]]
    pinned = pins()
    for text in declared:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{name} is a dependency but not pinned in constraints.txt"
        assert requirement.specifier.contains(pinned[name], prereleases=True), f"{name}=={pinned[name]} vs {text}"


def acon(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    script = Path(sys.executable).with_name("acon")  # the installed console script, as a user runs it
    command = [str(script)] if script.exists() else [sys.executable, "-m", "optimizer"]
    return subprocess.run([*command, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_the_cli_error_path_with_the_installed_versions(tmp_path):
    usage = acon("run", "--bogus", cwd=tmp_path)
    acon_error = acon("run", str(tmp_path / "nope.toml"), cwd=tmp_path)
    for done, says in ((usage, "--bogus"), (acon_error, "config file not found")):
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2, done.stderr
        assert len(lines) == 1 and lines[0].startswith("acon: error: ") and says in lines[0], done.stderr
