"""The tier-1 text probe: its rows are the named layout texts at the recorded knobs beside `none`, its report pairs the
first text with each other row, and what it cannot run is refused before any model starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from optimizer.evaluate.codec import decode_episode
from tests.conftest import benchmark_module

RECORDED = "benchmarks/results/summary_instructions_reach_long_langchain_equal_peak2500_tier1x10_val.json"


@pytest.fixture(scope="module")
def probe():
    yield from benchmark_module("probe_summary_tier1")


@pytest.fixture(scope="module")
def bench():
    yield from benchmark_module("bench_summary_instructions")


def test_the_rows_are_none_and_each_text_at_the_recorded_knobs(probe, bench):
    recorded = json.loads((probe.ROOT / RECORDED).read_text())
    rows = probe.rows_for(recorded, {n: probe.texts()[n] for n in ("facts-by-call+contract", "default")})
    assert list(rows) == ["none", "facts-by-call+contract", "default"]
    knobs = recorded["knobs"]
    make = bench.make_target("langchain", knobs["trigger"], knobs["keep"], knobs["summary_max_tokens"])
    assert rows["default"].version() == make(probe.texts()["default"]).version()
    assert rows["facts-by-call+contract"].version() != rows["default"].version()
    assert rows["default"].trigger() == 2000 and rows["default"].keep_messages == 4
    assert not rows["none"].uses_compressor  # so its stored episodes are read back whatever the summarizer


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--text", "facts-by-cal"], "--text: no layout probe text 'facts-by-cal'"),
        (["--text", "default", "--text", "default"], "named twice"),
        (["--text", "default", "--text", "default=README.md"], "named twice"),
        (["--text", "mine=no/such/file.txt"], "--text 'mine=no/such/file.txt': No such file or directory"),
        (["--text", "seed+contract=README.md"], "'seed+contract' names a layout probe text"),
        (["--text", "default", "--seeds", "0"], "--seeds: must be 1 to 5, got 0"),
        (["--text", "default", "--seeds", "6"], "--seeds: must be 1 to 5, got 6"),
    ],
)
def test_a_bad_text_is_refused_before_any_model(probe, capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        probe.main(["--from", RECORDED, "--summarizer", "qwen2.5-coder-1.5b", *argv])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("change", [{"split": "test"}, {"tier1": "not run"}, {"target": "anthropic"}])
def test_a_source_it_cannot_use_is_refused_in_one_line(probe, tmp_path, capsys, change):
    recorded = json.loads((probe.ROOT / RECORDED).read_text()) | change
    source = tmp_path / "recorded.json"
    source.write_text(json.dumps(recorded))
    with pytest.raises(SystemExit) as exit_info:
        probe.main(["--from", str(source), "--summarizer", "m", "--text", "default"])
    assert exit_info.value.code == 2 and "--from: a validation run" in capsys.readouterr().err


def test_a_text_from_a_file_runs_under_its_name_beside_the_layout_texts(probe, tmp_path):
    recorded = json.loads((probe.ROOT / RECORDED).read_text())
    mine = tmp_path / "mine.txt"
    said = "Summarize what each call returned."
    mine.write_text(said)
    argv = ["--from", RECORDED, "--summarizer", "m", "--text", f"mine={mine}", "--text", "default"]
    _, chosen = probe._checked(probe._parser(), probe._parser().parse_args(argv))
    assert chosen == {"mine": said, "default": probe.texts()["default"]}
    rows = probe.rows_for(recorded, chosen)
    assert list(rows) == ["none", "mine", "default"] and rows["mine"].instructions == said


def test_the_output_is_named_for_the_source_and_the_summarizer(probe):
    assert (
        probe.out_name(Path(RECORDED), "qwen2.5-coder-1.5b")
        == "summary_tier1_reach_long_langchain_equal_peak2500_tier1x10_qwen2.5-coder-1.5b_val.json"
    )


def row(by_task: dict[str, bool], peak: float) -> dict:
    return {
        "tier1_success": sum(by_task.values()) / len(by_task),
        "tier1_peak_mean": peak,
        "tier1_episodes": len(by_task),
        "tier1_by_task": {k: float(v) for k, v in by_task.items()},
        "tier1_failures": {"write missing": sum(not v for v in by_task.values())},
    }


def test_the_report_pairs_the_first_text_with_each_other_row_and_lists_the_recorded_ones(probe):
    recorded = json.loads((probe.ROOT / RECORDED).read_text())
    config = probe.load_experiment(probe.ROOT / "experiments" / "summary_reach_long.toml")
    tasks = probe.tier1_tasks_of(recorded, config)[:2]
    a, b = tasks[0].id, tasks[1].id
    measured = {"none": row({a: True, b: True}, 3000), "facts-by-call+contract": row({a: True, b: False}, 2100)}

    def report(rows: dict) -> dict:
        runs = probe.ROOT / "benchmarks" / "results"
        return probe.report_of(recorded, Path(RECORDED), "m", config, tasks, runs, rows, "facts-by-call+contract", 0)

    full = report(measured)
    assert full["tier1"]["seeds"] == 1 and full["recorded"]["seeds"] == 1
    more = probe.report_of(
        recorded,
        Path(RECORDED),
        "m",
        config,
        tasks,
        probe.ROOT / "benchmarks" / "results",
        measured,
        "facts-by-call+contract",
        0,
        None,
        2,
    )
    assert more["tier1"]["seeds"] == 2 and more["recorded"]["seeds"] == 1  # the recorded run keeps its own count
    assert list(full["paired"]) == ["facts-by-call+contract-none"]
    assert full["paired"]["facts-by-call+contract-none"]["mean"] == pytest.approx(-0.5)
    assert list(full["texts"]) == ["facts-by-call+contract"]
    # A report written after the first row, before the candidate ran, pairs nothing rather than failing.
    assert report({"none": measured["none"]})["paired"] == {}
    table = probe.table(full)
    assert "| facts-by-call+contract | 1 of 2 | 2,100 | write missing 1 |" in table
    assert "facts-by-call+contract-none: -0.50" in table
    assert "recorded run, summarizer qwen2.5-coder-0.5b" in table and "  learned: 1 of 10" in table


X = "facts-by-call+contract"


def test_tier0_rows_are_paired_apart_and_the_disagreeing_tasks_counted(probe):
    recorded = json.loads((probe.ROOT / RECORDED).read_text())
    config = probe.load_experiment(probe.ROOT / "experiments" / "summary_reach_long.toml")
    tasks = probe.tier1_tasks_of(recorded, config)[:2]
    a, b = tasks[0].id, tasks[1].id
    # `none` at tier 0 for real: the reference agent, no summarizer.
    none = row({a: True, b: False}, 3000) | probe.tier0_part(probe.tier0(probe.parse_strategy("none"), tasks, None))
    assert none["tier0_success"] == 1.0 and none["tier0_by_task"] == {a: 1.0, b: 1.0}
    text = row({a: False, b: False}, 2100) | {
        "tier0_success": 0.5,
        "tier0_peak_mean": 1900.0,
        "tier0_by_task": {a: 1.0, b: 0.0},
    }
    runs = probe.ROOT / "benchmarks" / "results"
    report = probe.report_of(recorded, Path(RECORDED), "m", config, tasks, runs, {"none": none, X: text}, X, 0)
    assert report["paired_tier0"][f"{X}-none"]["mean"] == pytest.approx(-0.5)
    assert report["paired"][f"{X}-none"]["mean"] == pytest.approx(-0.5)
    table = probe.table(report)
    assert "  none: tier 0 1.00 at" in table and "the tiers disagree on 1 of 2 tasks" in table
    assert f"  {X}: tier 0 0.50 at 1,900, tier 1 0.00; the tiers disagree on 1 of 2 tasks" in table
    # Without tier-0 rows the table says nothing about tier 0.
    assert "tier 0 (the reference agent)" not in probe.table(report | {"rows": {X: row({a: 1, b: 0}, 1)}})


BY_CALL_RUN = "benchmarks/results/runs_summary_reach_long_langchain_val/langchain_summary-llm-train-74b5939c1e"


def test_the_stored_by_call_run_restates_the_task_on_the_gift_and_order_fix_tasks(probe, bench):
    lines = (probe.ROOT / BY_CALL_RUN / "episodes.jsonl").read_text().splitlines()
    episodes = [decode_episode(json.loads(line)) for line in lines]
    assert bench.restating("tier1", episodes) == {"tier1_summaries": 30, "tier1_restating": 5}
    restating = {e.task_id.split("-")[1] for e in episodes if bench.restating("tier1", [e])["tier1_restating"]}
    assert restating == {"gift", "order_fix"}


def test_the_table_says_each_rows_restating_summaries_per_tier(probe):
    recorded = json.loads((probe.ROOT / RECORDED).read_text())
    config = probe.load_experiment(probe.ROOT / "experiments" / "summary_reach_long.toml")
    tasks = probe.tier1_tasks_of(recorded, config)[:1]
    none = row({tasks[0].id: True}, 3000) | probe.tier0_part(probe.tier0(probe.parse_strategy("none"), tasks, None))
    assert none["tier0_summaries"] == 0
    text = row({tasks[0].id: False}, 2100) | {"tier1_summaries": 3, "tier1_restating": 1}
    runs = probe.ROOT / "benchmarks" / "results"
    report = probe.report_of(recorded, Path(RECORDED), "m", config, tasks, runs, {"none": none, X: text}, X, 0)
    table = probe.table(report)
    assert f"summaries restating the task (no result in them):\n  {X}: tier1 1 of 3" in table
    assert "  none:" not in table.split("restating the task")[1].split("\n\n")[0]
