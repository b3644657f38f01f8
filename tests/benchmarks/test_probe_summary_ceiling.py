"""The ceiling probe rebuilds a recorded run's rows exactly (so their stored tier-1 episodes are read back, not rerun)
and refuses what it cannot diagnose before any model starts."""

from __future__ import annotations

import json

import pytest

from optimizer.config import load_experiment
from optimizer.summary.ceiling import LangChainSummaryCeiling
from tests.conftest import benchmark_module

RECORDED = "benchmarks/results/summary_instructions_reach_long_langchain_equal_peak2500_tier1x10_val.json"


@pytest.fixture(scope="module")
def probe():
    yield from benchmark_module("probe_summary_ceiling")


@pytest.fixture(scope="module")
def bench():
    yield from benchmark_module("bench_summary_instructions")


def test_the_recorded_rows_are_rebuilt_with_the_content_they_ran_with(probe, bench):
    recorded = json.loads((probe.ROOT / RECORDED).read_text())
    config = load_experiment(probe.ROOT / "experiments" / "summary_reach_long.toml")
    rows = probe.rows_from(recorded, config)
    assert list(rows) == [n for n, r in recorded["rows"].items() if "tier1_success" in r] + ["ceiling"]
    make = bench.make_target("langchain", 2000, 4, recorded["knobs"]["summary_max_tokens"])
    assert rows["learned"].version() == make(recorded["texts"]["learned"]).version()
    assert rows["default@2400"].trigger() == 2400 and rows["default"].trigger() == 2000
    assert isinstance(rows["ceiling"], LangChainSummaryCeiling) and rows["ceiling"].keep_messages == 4
    tasks = probe.tier1_tasks_of(recorded, config)
    assert len(tasks) == recorded["tier1"]["tasks"]
    assert {t.id for t in tasks} <= set(recorded["tasks"]["figure_ids"])


@pytest.mark.parametrize(
    ("change", "message"),
    [({"split": "test"}, "validation run"), ({"tier1": "not run"}, "validation run"), ({"target": "anthropic"}, "")],
)
def test_what_it_cannot_diagnose_is_refused_in_one_line(probe, tmp_path, capsys, change, message):
    recorded = json.loads((probe.ROOT / RECORDED).read_text()) | change
    source = tmp_path / "recorded.json"
    source.write_text(json.dumps(recorded))
    with pytest.raises(SystemExit) as exit_info:
        probe.main(["--from", str(source)])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_an_unreadable_source_is_refused(probe, tmp_path, capsys):
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(SystemExit) as exit_info:
        probe.main(["--from", str(tmp_path / "broken.json")])
    assert exit_info.value.code == 2 and "--from" in capsys.readouterr().err


def test_trigger_and_keep_move_the_ceiling_alone(probe):
    recorded = json.loads((probe.ROOT / RECORDED).read_text())
    config = load_experiment(probe.ROOT / "experiments" / "summary_reach_long.toml")
    as_recorded, moved = probe.rows_from(recorded, config), probe.rows_from(recorded, config, (2000, 8))
    assert moved["ceiling"].keep_messages == 8 and moved["ceiling"].trigger() == 2000
    assert moved["ceiling"].version() != as_recorded["ceiling"].version()
    assert all(moved[n].version() == as_recorded[n].version() for n in as_recorded if n != "ceiling")


def test_a_moved_ceiling_is_written_beside_the_recorded_one_not_over_it(probe):
    source, knobs = probe.ROOT / RECORDED, {"trigger": 2000, "keep": 4}
    assert (
        probe.out_name(source, knobs, 2000, 4)
        == "summary_ceiling_reach_long_langchain_equal_peak2500_tier1x10_val.json"
    )
    assert (
        probe.out_name(source, knobs, 2000, 8)
        == "summary_ceiling_reach_long_langchain_equal_peak2500_tier1x10_at2000x8_val.json"
    )


@pytest.mark.parametrize("flag", ["--trigger", "--keep"])
@pytest.mark.parametrize("value", ["0", "-4"])
def test_a_knob_that_is_not_positive_is_refused(probe, capsys, flag, value):
    with pytest.raises(SystemExit) as exit_info:
        probe.main(["--from", str(probe.ROOT / RECORDED), flag, value])
    assert exit_info.value.code == 2 and f"{flag}: must be positive" in capsys.readouterr().err
