"""Light versions of benchmarks/bench_limits.py: a 1 MB tool output and a 200-step episode finish, in a
fresh process, under generous bounds; the episode record grows linearly with steps."""

from __future__ import annotations

import json
import subprocess
import sys

from benchmarks.bench_limits import archive_task
from optimizer.agent.loop import EpisodeServices, run_episode
from optimizer.agent.reference import ReferenceAgent
from optimizer.context.strategies import parse_strategy
from optimizer.evaluate.codec import decode_episode, encode_episode
from tests.conftest import ROOT

POINTS = [
    ("output", 1_000_000, "none"),
    ("output", 1_000_000, "clear_tool_uses"),
    ("steps", 100, "none"),
    ("steps", 200, "none"),
    ("steps", 200, "clear_tool_uses"),
]


def test_a_megabyte_output_and_a_200_step_episode_stay_within_bounds():
    code = (
        "import json, sys; from benchmarks.bench_limits import measure; "
        f"print(json.dumps([measure(*p) for p in {POINTS!r}]))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    points = {(p["case"], p["size"], p["strategy"]): p for p in json.loads(done.stdout.strip().splitlines()[-1])}
    for key, point in points.items():
        assert point["success"] and point["wall_s"] < 30, (key, point)
        assert point["peak_rss_mb"] - point["base_rss_mb"] < 400, (key, point)
    # One record per step holds each checkpoint as a delta: twice the steps, about twice the bytes.
    small, large = points[("steps", 100, "none")], points[("steps", 200, "none")]
    assert large["record_mb"] < 2.5 * small["record_mb"] and large["record_mb"] < 1.5


def test_an_episode_record_round_trips_and_old_records_still_load():
    task = archive_task(40, 400)
    episode = run_episode(task, ReferenceAgent(task.reference), parse_strategy("clear_tool_uses"), EpisodeServices())
    record = json.loads(json.dumps(encode_episode(episode)))
    assert any(isinstance(step["replayed"], dict) for step in record["steps"])  # deltas on disk
    again = decode_episode(record)
    assert again.steps == episode.steps and again.texts == episode.texts
    assert encode_episode(again) == record
    old = {**record, "steps": [{**s.__dict__} for s in episode.steps]}  # plain lists, as written before
    assert decode_episode(old).steps == episode.steps
