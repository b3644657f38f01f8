"""The episode codec: typed records in memory, JSON only at the store, format 4 still read, others refused.

`fixtures/format4/` is a run directory written by acon at RUN_FORMAT 4 (commit 6540bd9, before lines
carried a format): the reference agent on two smoke tasks under `fifo` (keep_last 1), so it holds a replay
record that broke the cache.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from optimizer.agent.episode import Episode
from optimizer.agent.episode_records import DeviationRecord, EntryRecord, EpisodeMetrics, ToolCallRecord
from optimizer.agent.loop import EpisodeServices, run_episode
from optimizer.agent.reference import ReferenceAgent
from optimizer.context.history import EntryKind
from optimizer.context.record import CompressionRecord
from optimizer.context.strategies import parse_strategy
from optimizer.evaluate.codec import RUN_FORMAT, RunFormatError, decode_episode, encode_episode
from optimizer.evaluate.records import EpisodeSummary
from optimizer.evaluate.store import EpisodeStore
from optimizer.world.retention import RetentionClass
from optimizer.world.suite import load_suite

FORMAT4 = Path(__file__).parent / "fixtures" / "format4"


def test_run_format_is_6():
    assert RUN_FORMAT == 6


@pytest.mark.parametrize(("suite", "task_id"), [("smoke", "smoke-total"), ("builtin", "store_credit-00")])
def test_an_episode_round_trips_through_json_with_its_records_typed(suite, task_id):
    task = load_suite(suite).task(task_id)
    strategy = parse_strategy({"type": "fifo", "keep_last": 1})
    episode = run_episode(task, ReferenceAgent(task.reference), strategy, EpisodeServices())
    assert episode.records and episode.tool_calls and episode.entries  # else the round trip proves little
    assert episode.deviations or suite == "smoke"  # the builtin task loses literals under fifo(1)
    line = json.loads(json.dumps(encode_episode(episode)))
    assert line["format"] == RUN_FORMAT
    again = decode_episode(line)
    assert again == episode
    assert encode_episode(again) == line
    assert all(isinstance(e, EntryRecord) and isinstance(e.kind, EntryKind) for e in again.entries)
    assert all(isinstance(r, CompressionRecord) for r in again.records)
    assert all(isinstance(c, ToolCallRecord) for c in again.tool_calls)
    assert all(isinstance(d, DeviationRecord) for d in again.deviations)
    assert isinstance(again.metrics, EpisodeMetrics) and again.metrics == episode.metrics


def test_the_loop_files_records_complete():
    """`breaks_cache` is set when the record is filed (it used to be patched into the dict afterwards)."""
    task = load_suite("smoke").task("smoke-total")
    episode = run_episode(
        task, ReferenceAgent(task.reference), parse_strategy({"type": "fifo", "keep_last": 1}), EpisodeServices()
    )
    breaking = {s.step for s in episode.steps if s.cache_break}
    replays = [r for r in episode.records if r.stage == "replay"]
    assert replays and all(r.breaks_cache == (r.step in breaking) for r in replays)
    assert all(r.started_s is not None and r.latency_s is not None for r in episode.records)


def test_a_format_4_run_directory_still_loads(tmp_path):
    run = shutil.copytree(FORMAT4, tmp_path / "run")
    lines = [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]
    assert all("format" not in line for line in lines)  # what format 4 looked like
    store = EpisodeStore(run)
    episodes = store.load()
    assert [e.task_id for e in episodes] == ["smoke-total", "smoke-refund"]
    total = episodes[0]
    assert total.outcome == "success" and total.metrics.peak_tokens == lines[0]["metrics"]["peak_tokens"]
    assert total.entries[0].kind is EntryKind.TASK and total.entries[0].visible_from == 0
    result = next(e for e in total.entries if e.kind == "result")
    assert isinstance(result.retention, RetentionClass) and result.call is not None
    assert [c.name for c in total.tool_calls] == [c["name"] for c in lines[0]["tool_calls"]]
    assert any(r.breaks_cache for r in total.records)
    # Nothing of a format-4 line is lost on the way in: re-encoded, it is the same line with the new tag
    # and fact visibility marked as not measured.
    unmeasured = {"facts_needed": None, "facts_visible": None}
    for line, episode in zip(lines, episodes, strict=True):
        assert encode_episode(episode) == {**line, "format": RUN_FORMAT, "metrics": {**line["metrics"], **unmeasured}}
    _, summaries = store.index()
    assert summaries["smoke-total"] == EpisodeSummary.of(total)
    assert total.locate("42.5")[-1]["checkpoints"][5]  # delta-encoded steps still expand


def test_a_run_directory_of_an_unknown_format_fails_in_one_line(tmp_path):
    run = shutil.copytree(FORMAT4, tmp_path / "run")
    log = run / "episodes.jsonl"
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    log.write_text("".join(json.dumps({**line, "format": 9}) + "\n" for line in lines))
    for read in (EpisodeStore(run).load, EpisodeStore(run).index):
        with pytest.raises(RunFormatError) as failure:
            read()
        message = str(failure.value)
        assert "\n" not in message
        assert str(run) in message and "format 9" in message and "4, 5, 6" in message and "re-run" in message


def test_an_unfinished_episode_has_zero_metrics():
    episode = Episode(
        task_id="t", suite="s", strategy="none", strategy_version="v", agent="reference", outcome="failure"
    )
    assert decode_episode(encode_episode(episode)).metrics == EpisodeMetrics()
