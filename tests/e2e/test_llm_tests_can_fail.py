"""The `llm` tests check what the model wrote: run against a model that writes garbage, every one fails."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ElementTree

from tests.conftest import ROOT


def test_every_llm_test_fails_against_a_garbage_model(tmp_path):
    report = tmp_path / "junit.xml"
    process = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-m",
            "llm",
            "-p",
            "tests.e2e.garbage_model",
            "tests/e2e",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--junitxml={report}",
            "--basetemp",
            str(tmp_path / "base"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    cases = ElementTree.parse(report).getroot().iter("testcase")
    outcomes = {f"{c.get('classname')}.{c.get('name')}": [child.tag for child in c] for c in cases}
    assert len(outcomes) >= 4, process.stdout[-2000:]
    passed = [name for name, children in outcomes.items() if not children]
    assert passed == [], f"passed on garbage: {passed}"
    assert all(children == ["failure"] for children in outcomes.values()), outcomes  # failed, not errored/skipped
    assert process.returncode == 1
