"""`acon export FILE`: a guideline file converts between Markdown and JSON without losing anything."""

from __future__ import annotations

import json

from optimizer.context.guideline import Guideline
from tests.conftest import ROOT

LEARNED = ROOT / "guidelines" / "learned" / "quickstart.md"


def test_markdown_to_json_and_back_keeps_the_guideline(run_cli, tmp_path):
    original = Guideline.from_markdown(LEARNED.read_text())
    code, out, err = run_cli("export", str(LEARNED), "--format", "json", "--out", str(tmp_path / "g.json"))
    assert code == 0, err
    assert original.version in out
    data = json.loads((tmp_path / "g.json").read_text())
    assert data["version"] == original.version and data["name"] == original.name
    assert data["provenance"] == original.provenance and data["description"] == original.description

    code, _, err = run_cli("export", str(tmp_path / "g.json"), "--format", "md", "--out", str(tmp_path / "g.md"))
    assert code == 0, err
    assert Guideline.from_markdown((tmp_path / "g.md").read_text()) == original


def test_json_of_a_guideline_to_stdout(run_cli):
    code, out, err = run_cli("export", str(LEARNED), "--format", "json")
    assert code == 0, err
    assert json.loads(out)["history"] == Guideline.from_markdown(LEARNED.read_text()).history


def test_a_json_version_that_disagrees_with_the_content_is_recomputed(run_cli, tmp_path):
    data = {**Guideline.from_markdown(LEARNED.read_text()).model_dump(mode="json"), "version": "000000000000"}
    (tmp_path / "g.json").write_text(json.dumps(data))
    code, out, err = run_cli("export", str(tmp_path / "g.json"))
    assert code == 0, err
    assert "version: 000000000000" not in out
    assert Guideline.from_markdown(out).version == Guideline.from_markdown(LEARNED.read_text()).version


def test_an_unpinned_guideline_exports_only_under_the_override_and_says_so(run_cli, tmp_path):
    unpinned = ROOT / "guidelines" / "examples" / "unpinned.md"
    code, _, err = run_cli("export", str(unpinned), "--allow-unpinned", "--out", str(tmp_path / "g.md"))
    assert code == 0, err
    assert "contract override (pass --allow-unpinned)" in err and "skill unpinned" in err
    assert Guideline.from_markdown((tmp_path / "g.md").read_text()) == Guideline.from_markdown(unpinned.read_text())
