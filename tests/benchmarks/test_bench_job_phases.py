"""The job-phase benchmark on a hand-made job directory with set file times."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import benchmark_module


@pytest.fixture(scope="module")
def bench():
    yield from benchmark_module("bench_job_phases")


def write_run(job: Path, name: str, agent: str, split: str, episodes: int, start: float, end: float) -> None:
    run = job / "runs" / name
    run.mkdir(parents=True)
    (run / "meta.json").write_text(json.dumps({"agent": agent, "split": split}))
    (run / "episodes.jsonl").write_text("{}\n" * episodes)
    os.utime(run / "meta.json", (start, start))
    os.utime(run / "episodes.jsonl", (end, end))


def test_phases_add_up_and_tier1_rate_counts_tier1_time_only(bench, tmp_path, capsys):
    write_run(tmp_path, "a", "reference", "train", 50, 1000, 1060)
    write_run(tmp_path, "b", "llm", "train", 6, 2000, 2000 + 600)
    write_run(tmp_path, "c", "llm", "val", 8, 3000, 3000 + 600)
    write_run(tmp_path, "d", "llm", "test", 2, 4000, 4000 + 200)
    (tmp_path / "runs" / "e").mkdir()  # a run that never stored an episode is skipped
    (tmp_path / "runs" / "e" / "meta.json").write_text(json.dumps({"agent": "llm", "split": "train"}))
    (tmp_path / "state.json").write_text(json.dumps({"wall_s": 1800}))
    out = tmp_path / "phases.json"
    assert bench.main([str(tmp_path), "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["phases"]["tier 1: mine pairs (train)"] == {"runs": 1, "episodes": 6, "seconds": 600}
    assert report["episode_seconds"] == 60 + 600 + 600 + 200
    assert report["tier1_episodes"] == 16
    assert report["tier1_episodes_per_hour"] == pytest.approx(16 / 1400 * 3600)
    assert "| search (proposers, diffs, tracking) | | | 5.7 |" in capsys.readouterr().out


def test_not_a_job_directory_is_one_line(bench, tmp_path, capsys):
    assert bench.main([str(tmp_path)]) == 1
    assert "not a job directory" in capsys.readouterr().err
