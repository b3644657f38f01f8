"""Results that match their inputs: runs are keyed by what a guideline file says, not by where it is.

Edit a guideline and rerun: new episodes, under the new version. Leave it alone and rerun: the old ones.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from optimizer.context.guideline import read_guideline
from optimizer.context.strategies import parse_strategy
from optimizer.evaluate.strategy_runs import RUN_FORMAT, code_version
from tests.conftest import ROOT, scripted

SEED = ROOT / "guidelines" / "seed" / "seed.md"


def experiment(tmp: Path, url: str, strategy: str) -> Path:
    endpoint = f'base_url = "{url}"\nmodel = "stub"\nbackoff_s = 0.0\n'
    path = tmp / "exp.toml"
    path.write_text(
        f'name = "stale"\nout = "{tmp / "out"}"\n[suite]\ntype = "smoke"\n[run]\nsplit = "all"\nagent = "reference"\n'
        f'[strategy]\ntype = "{strategy}"\nguideline = "{tmp / "g.md"}"\n'
        f"[tracking]\nenabled = false\n[endpoints.compressor]\n{endpoint}"
    )
    return path


def run(run_cli, path: Path, tmp: Path) -> tuple[Path, list[dict]]:
    code, _, err = run_cli("run", str(path), "--json", str(tmp / "out.json"))
    assert code == 0, err
    directory = Path(json.loads((tmp / "out.json").read_text())["summary"]["directory"])
    records = [json.loads(line) for line in (directory / "episodes.jsonl").read_text().splitlines()]
    return directory, records


@pytest.mark.parametrize("strategy", ["guideline", "llm_observation", "llm_history"])
def test_an_edited_guideline_gets_new_episodes_and_an_unchanged_one_reuses_them(run_cli, tmp_path, stub, strategy):
    url = stub(scripted(["compressed"])).base_url
    guideline = tmp_path / "g.md"
    guideline.write_text(SEED.read_text())
    path = experiment(tmp_path, url, strategy)
    first_dir, first = run(run_cli, path, tmp_path)
    assert len(first) == 3

    again_dir, again = run(run_cli, path, tmp_path)
    assert again_dir == first_dir and again == first  # unchanged file: the same episodes, none re-run

    old_version = read_guideline(guideline).version
    text = SEED.read_text()
    edited = text.replace("over: 1024,", "over: 1000,") if strategy == "guideline" else text + "\nBe brief.\n"
    assert edited != text
    guideline.write_text(edited)
    assert read_guideline(guideline).version != old_version
    edited_dir, edited_records = run(run_cli, path, tmp_path)
    assert edited_dir != first_dir and len(edited_records) == 3
    versions = {r["strategy_version"] for r in edited_records}
    assert versions == {parse_strategy({"type": strategy, "guideline": str(guideline)}).version()}
    assert versions.isdisjoint({r["strategy_version"] for r in first})
    meta = json.loads((edited_dir / "meta.json").read_text())
    assert meta["code"] == code_version() and meta["code"]["run_format"] == RUN_FORMAT


def test_the_same_guideline_at_another_path_is_the_same_run(run_cli, tmp_path, stub):
    url = stub(scripted(["compressed"])).base_url
    (tmp_path / "g.md").write_text(SEED.read_text())
    path = experiment(tmp_path, url, "guideline")
    first_dir, first = run(run_cli, path, tmp_path)
    (tmp_path / "g.md").rename(tmp_path / "moved.md")
    path.write_text(path.read_text().replace(str(tmp_path / "g.md"), str(tmp_path / "moved.md")))
    moved_dir, moved = run(run_cli, path, tmp_path)
    assert moved_dir == first_dir and moved == first


def test_llm_strategy_versions_follow_the_file_content(tmp_path):
    for strategy in ("llm_history", "llm_observation"):
        file = tmp_path / f"{strategy}.md"
        file.write_text(SEED.read_text())
        before = parse_strategy({"type": strategy, "guideline": str(file)}).version()
        copy = tmp_path / f"{strategy}-copy.md"
        copy.write_text(SEED.read_text())
        assert parse_strategy({"type": strategy, "guideline": str(copy)}).version() == before
        file.write_text(SEED.read_text().replace("## History compressor\n", "## History compressor\n\nShorter.\n"))
        assert parse_strategy({"type": strategy, "guideline": str(file)}).version() != before
