"""`acon suites list | show | export | import`."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from optimizer.cli import suites_cmd
from optimizer.errors import ConfigError
from optimizer.world.suite import available_suites
from optimizer.world.task import NeedKind
from tasks.bfcl import BfclSuite
from tasks.builtin import BuiltinSuite
from tasks.replay import ReplaySuite
from tasks.replay import suite as replay
from tasks.smoke import SmokeSuite
from tests.conftest import ROOT

EXAMPLE = str(ROOT / "experiments" / "data" / "example_trajectories.jsonl")


@pytest.fixture(autouse=True)
def imported_copy(monkeypatch):
    """Imports name their suites for this process; each test sees (and leaves) those names as they were."""
    monkeypatch.setattr(replay, "_IMPORTED", dict(replay._IMPORTED))


@pytest.fixture
def few_suites(monkeypatch):
    """`list` over smoke, builtin and a BFCL suite whose package is missing (BFCL loads take seconds)."""

    def missing() -> None:
        raise ConfigError("the BFCL suites need bfcl-eval, which is not installed; run `acon setup`")

    monkeypatch.setattr("tasks.bfcl.data.require", missing)
    named = {"smoke": SmokeSuite, "builtin": BuiltinSuite, "bfcl_base": lambda: BfclSuite(category="multi_turn_base")}

    def listed() -> dict:
        return {**named, **replay._IMPORTED}

    monkeypatch.setattr(suites_cmd, "available_suites", listed)


def test_list_shows_sizes_and_families_and_skips_bfcl_when_missing(run_cli, few_suites):
    code, out, err = run_cli("suites", "list")
    assert code == 0, err
    smoke = next(line for line in out.splitlines() if "│ smoke" in line)
    assert [cell.strip() for cell in smoke.split("│")[2:6]] == ["smoke", "3", "1", "2"]
    builtin = next(line for line in out.splitlines() if "│ builtin" in line)
    assert [cell.strip() for cell in builtin.split("│")[2:6]] == ["builtin", "64", "32", "32"]
    assert "catalog_quote (9)" in out and "kb_answer (10)" in out
    assert "│ bfcl_base" not in out
    assert "not installed (run `acon setup`): bfcl_base" in out


def test_list_shows_an_imported_suite(run_cli, few_suites, tmp_path):
    assert run_cli("suites", "import", EXAMPLE, "--name", "bike_ops", "--out", str(tmp_path))[0] == 0
    code, out, _ = run_cli("suites", "list")
    assert code == 0
    row = next(line for line in out.splitlines() if "│ bike_ops" in line)
    assert [cell.strip() for cell in row.split("│")[2:7]] == [
        "replay",
        "4",
        "2",
        "2",
        "example_trajectories.jsonl (4)",
    ]


def test_show_lists_the_tasks(run_cli):
    code, out, err = run_cli("suites", "show", "smoke")
    assert code == 0, err
    assert "smoke: 3 tasks (train 1, test 2)" in out
    for task_id in ("smoke-status", "smoke-total", "smoke-refund"):
        assert task_id in out
    assert "value 2" in out  # smoke-total's two VALUE needs


def test_show_one_task_gives_instruction_tools_with_classes_and_needs(run_cli):
    task = BuiltinSuite().load().task("catalog_quote-01")
    code, out, err = run_cli("suites", "show", "builtin", "--task", task.id)
    assert code == 0, err
    assert task.instruction.split("\n")[0][:60] in out
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.startswith("│")}
    assert "static" in rows["search_catalog"] and "write_receipt" in rows["create_quote"]
    assert "yes" in rows["create_quote"]  # side effect
    needs = {n.kind: n for step in task.reference for n in step.needs}
    value, receipt = needs[NeedKind.VALUE], needs[NeedKind.RECEIPT]
    assert f"value {value.literal!r} in {value.argument}" in out and f"from {value.source_class}" in out
    assert f"receipt {receipt.literal!r} (else repeats {receipt.repeat.name})" in out


def test_show_an_unknown_task_or_suite_exits_2(run_cli):
    code, _, err = run_cli("suites", "show", "smoke", "--task", "nope")
    assert code == 2 and "no task 'nope'" in err and err.count("\n") == 1
    code, _, err = run_cli("suites", "show", "no_such_suite")
    assert code == 2 and "unknown suite 'no_such_suite'" in err


def test_export_writes_the_suite_and_its_splits_to_parquet(run_cli, tmp_path):
    code, _, err = run_cli("suites", "export", "builtin", "--out", str(tmp_path))
    assert code == 0, err
    table = pq.read_table(tmp_path / "builtin.parquet").to_pylist()
    assert len(table) == 64
    assert {row["split"] for row in table} == {"train", "test"}
    for split in ("train", "test"):
        rows = pq.read_table(tmp_path / "builtin" / f"{split}.parquet").to_pylist()
        assert len(rows) == 32 and {row["split"] for row in rows} == {split}
    task = BuiltinSuite().load().task("catalog_quote-01")
    row = next(r for r in table if r["id"] == task.id)
    assert row["instruction"] == json.loads(row["turns"])[0] == task.instruction
    assert {t["name"]: t["retention_class"] for t in json.loads(row["tools"])}["create_quote"] == "write_receipt"
    steps = json.loads(row["reference"])
    index, step = next((i, s) for i, s in enumerate(task.reference) if s.needs and s.call is not None)
    need = step.needs[0]
    assert steps[index]["call"] == {"id": step.call.id, "name": step.call.name, "arguments": step.call.arguments}
    assert steps[index]["needs"][0] == {
        "kind": need.kind.value,
        "literal": need.literal,
        "argument": need.argument,
        "guess": need.guess,
        "source_class": need.source_class,
        "repeat": None,
        "shown_as": need.shown_as,
    }
    assert json.loads(row["meta"])["family"] == "catalog_quote"
    assert len(json.loads(row["recording"])) == sum(s["call"] is not None for s in steps)


def test_an_exported_suite_runs_as_a_replay_config(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run_cli("suites", "export", "smoke", "--out", "exported")[0] == 0
    config = tmp_path / "exp.toml"
    config.write_text(
        'name = "again"\n[suite]\ntype = "replay"\npath = "exported/smoke.parquet"\n'
        '[run]\nsplit = "all"\nagent = "reference"\n'
    )
    code, _, err = run_cli("run", str(config), "--json", "out.json")
    assert code == 0, err
    summary = json.loads((tmp_path / "out.json").read_text())["summary"]
    assert summary["tasks"] == 3 and summary["success"] == 1.0


def test_import_then_run_by_name(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("suites", "import", EXAMPLE, "--name", "bike_ops")
    assert code == 0, err
    assert "imported 4 runs" in out and "train 2, test 2" in out and 'name = "bike_ops"' in out
    assert (tmp_path / "suites" / "bike_ops.parquet").exists()
    assert available_suites()["bike_ops"]() == ReplaySuite(name="bike_ops")
    config = tmp_path / "exp.toml"
    config.write_text(
        'name = "bikes"\n[suite]\ntype = "replay"\nname = "bike_ops"\n[run]\nsplit = "all"\nagent = "reference"\n'
    )
    code, _, err = run_cli("compare", str(config), "--strategies", "none,fifo", "--json", "cmp.json")
    assert code == 0, err
    rows = {r["strategy"]: r for r in json.loads((tmp_path / "cmp.json").read_text())["rows"]}
    assert rows["none"]["tasks"] == 4 and rows["none"]["success"] == 1.0
    code, out, _ = run_cli("suites", "show", "bike_ops", "--task", "canal-street-faults")
    assert code == 0 and "value 'BK-40117' in bike_id" in out and "from error_partial" in out


def test_import_of_a_malformed_file_exits_2_with_the_line_and_writes_nothing(run_cli, tmp_path):
    good = (ROOT / "experiments" / "data" / "example_trajectories.jsonl").read_text().splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([good[0], good[1], "{not json", good[2]]) + "\n")
    code, _, err = run_cli("suites", "import", str(bad), "--name", "bad", "--out", str(tmp_path / "out"))
    assert code == 2
    assert err.startswith(f"acon: error: {bad}:3: invalid JSON") and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_import_refuses_a_builtin_name_and_an_existing_file(run_cli, tmp_path):
    code, _, err = run_cli("suites", "import", EXAMPLE, "--name", "builtin", "--out", str(tmp_path))
    assert code == 2 and "taken by a built-in suite" in err
    assert run_cli("suites", "import", EXAMPLE, "--name", "mine", "--out", str(tmp_path))[0] == 0
    code, _, err = run_cli("suites", "import", EXAMPLE, "--name", "mine", "--out", str(tmp_path))
    assert code == 2 and "--force" in err
    assert run_cli("suites", "import", EXAMPLE, "--name", "mine", "--out", str(tmp_path), "--force")[0] == 0


def test_source_for_accepts_paths(tmp_path):
    assert suites_cmd.source_for(EXAMPLE) == ReplaySuite(path=EXAMPLE)
    assert isinstance(suites_cmd.source_for("smoke"), SmokeSuite)


def test_shipped_experiment_configs_validate_and_the_replay_example_passes(tmp_path):
    from optimizer.agent.loop import EpisodeServices, run_episode
    from optimizer.agent.reference import ReferenceAgent
    from optimizer.config import load_experiment
    from optimizer.context.strategies import parse_strategy

    for name, category in (("bfcl_base", "multi_turn_base"), ("bfcl_long_context", "multi_turn_long_context")):
        config = load_experiment(ROOT / "experiments" / f"{name}.toml")
        assert config.suite == BfclSuite(category=category) and config.run.agent == "reference"
        assert config.optimize.screen_agent == "reference" and config.optimize.budget.max_agent_episodes == 0
    config = load_experiment(ROOT / "experiments" / "replay_example.toml")
    suite = ReplaySuite(path=str(ROOT / config.suite.path)).load()  # paths are relative to the working directory
    assert len(suite.split(config.run.split)) == 4
    for task in suite.tasks:
        episode = run_episode(task, ReferenceAgent(task.reference), parse_strategy("none"), EpisodeServices())
        assert episode.success, (task.id, episode.reasons)


def test_import_keeps_extra_top_level_keys_in_meta_and_says_so(run_cli, tmp_path):
    lines = Path(EXAMPLE).read_text().splitlines()
    recorded = []
    for number, line in enumerate(lines):
        run = json.loads(line)
        run.update({"trace_id": f"tr-{number}", "score": 1.0, "model": "gpt-4.1-mini"})
        recorded.append(json.dumps(run))
    path = tmp_path / "recorded.jsonl"
    path.write_text("\n".join(recorded) + "\n")
    code, out, err = run_cli("suites", "import", str(path), "--name", "recorded", "--out", str(tmp_path))
    assert code == 0, err
    assert f"{len(lines)} runs carry top-level keys beyond the format (model, score, trace_id)" in out
    suite = ReplaySuite(path=str(tmp_path / "recorded.parquet")).load()
    metas = sorted((t.meta["trace_id"], t.meta["extra_keys"], t.meta["score"]) for t in suite.tasks)
    assert metas[0] == ("tr-0", ["model", "score", "trace_id"], 1.0)
