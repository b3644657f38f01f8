"""Shared fixtures: one migrated sqlite store per session, copied per module (a migration costs seconds)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from optimizer.agent.episode import Episode, StepRecord, text_hash
from optimizer.agent.episode_records import EntryRecord, EpisodeMetrics, ToolCallRecord
from optimizer.cli.ui_cmd import HOST, UiTarget, server_command, server_env, stop, wait_healthy
from optimizer.context.guideline import Guideline
from optimizer.context.history import EntryKind
from optimizer.context.record import CompressionRecord
from optimizer.llm.usage import Usage
from optimizer.world.retention import RetentionClass


@pytest.fixture(scope="session")
def migrated_db(tmp_path_factory) -> Path:
    """An empty, fully migrated MLflow database (tracking and registry tables)."""
    from mlflow import MlflowClient

    from optimizer.tracking.store import sqlite_uri

    path = tmp_path_factory.mktemp("template") / "mlflow.db"
    client = MlflowClient(tracking_uri=sqlite_uri(path), registry_uri=sqlite_uri(path))
    client.search_experiments()
    client.search_prompts()
    return path


@pytest.fixture(scope="module")
def job_dir(migrated_db, tmp_path_factory) -> Path:
    """A job directory whose store is a copy of the migrated template."""
    path = tmp_path_factory.mktemp("job")
    shutil.copy(migrated_db, path / "mlflow.db")
    return path


def make_guideline(history: str = "Keep every id, error and amount verbatim.", name: str = "seed") -> Guideline:
    return Guideline(name=name, history=history, observation="Keep the lines that answer the task.")


def make_episode(task_id: str = "t-1", *, strategy: str = "guideline", outcome: str = "success") -> Episode:
    """A two-step episode with agent usage, a tool call, a recall, and three kinds of compression."""
    texts = {
        "task": "Find order ORD-1 and refund it.",
        "system": "You are an agent.",
        "act0": '{"tool": "get_order"}',
        "res0": "order ORD-1: 3 items, total 42.00",
        "res0w": "[offloaded: handle h1]",
        "act1": '{"tool": "recall"}',
        "res1": "order ORD-1: 3 items, total 42.00",
        "cprompt": 'Guideline: keep ids.\n<data source="history">\norder ORD-1: 3 items\n</data>',
        "creply": "# History Summary\nORD-1 has 3 items.",
    }
    episode = Episode(
        task_id=task_id,
        suite="smoke",
        strategy=strategy,
        strategy_version="abc123",
        agent="llm",
        outcome=outcome,
        answers=["refunded"],
        wall_s=4.0,
    )
    h = {k: episode.store(v) for k, v in texts.items()}
    episode.entries = [
        EntryRecord(0, EntryKind.TASK, 0, 0, 0, h["task"], h["task"], 10),
        EntryRecord(1, EntryKind.ACTION, 0, 0, 1, h["act0"], h["act0"], 5),
        EntryRecord(2, EntryKind.RESULT, 0, 0, 1, h["res0w"], h["res0"], 12, RetentionClass.DYNAMIC_STATE),
        EntryRecord(3, EntryKind.ACTION, 1, 0, 2, h["act1"], h["act1"], 5),
        EntryRecord(4, EntryKind.RESULT, 1, 0, 2, h["res1"], h["res1"], 12, RetentionClass.DYNAMIC_STATE),
    ]
    episode.steps = [
        StepRecord(
            step=0,
            turn=0,
            replayed=[h["task"]],
            budgeted=[h["task"]],
            request=[{"role": "system", "text": h["system"]}, {"role": "user", "text": h["task"]}],
            input_tokens=100,
            action={"calls": [{"name": "get_order", "arguments": {"id": "ORD-1"}}]},
            usage={"prompt_tokens": 120, "completion_tokens": 20, "cached_tokens": 50},
            latency_s=1.0,
            started_s=0.5,
        ),
        StepRecord(
            step=1,
            turn=0,
            replayed=[h["task"]],
            budgeted=[h["task"]],
            request=[
                {"role": "system", "text": h["system"]},
                {"role": "user", "text": h["task"]},
                {"role": "assistant", "text": h["act0"]},
                {"role": "user", "text": h["res0w"]},
            ],
            input_tokens=160,
            action={"calls": [], "answer": "refunded"},
            usage={"prompt_tokens": 180, "completion_tokens": 10},
            latency_s=1.0,
            started_s=2.5,
        ),
    ]
    episode.tool_calls = [
        ToolCallRecord(
            step=0,
            turn=0,
            name="get_order",
            arguments={"id": "ORD-1"},
            signature='get_order({"id": "ORD-1"})',
            side_effect=False,
            is_error=False,
            retention=RetentionClass.DYNAMIC_STATE,
            result_tokens=12,
        ),
        ToolCallRecord(
            step=1,
            turn=0,
            name="recall",
            arguments={"handle": "h1"},
            signature='recall({"handle": "h1"})',
            side_effect=False,
            is_error=False,
            retention=RetentionClass.DYNAMIC_STATE,
            result_tokens=12,
        ),
    ]
    base = {"strategy": strategy, "guideline_version": "g123"}
    episode.records = [
        CompressionRecord(
            **base,
            stage="write",
            step=0,
            action="offload",
            entry_ids=(2,),
            tokens_before=12,
            tokens_after=5,
            dropped_by_class={"dynamic_state": 7},
            handles=("h1",),
        ),
        CompressionRecord(
            **base,
            stage="replay",
            step=1,
            action="summarize",
            entry_ids=(1, 2),
            tokens_before=40,
            tokens_after=15,
            dropped_by_class={"static": 25},
            compressor_usage=Usage(prompt_tokens=300, completion_tokens=30, cached_tokens=0),
            compressor_io=(h["cprompt"], h["creply"]),
        ),
        CompressionRecord(
            **base,
            stage="budget",
            step=1,
            action="truncate",
            entry_ids=(1,),
            tokens_before=15,
            tokens_after=10,
            dropped_by_class={"static": 5},
        ),
    ]
    episode.metrics = EpisodeMetrics(success=outcome == "success", peak_tokens=160, steps=2)
    assert text_hash(texts["task"]) == h["task"]
    return episode


# Agent calls 120+20 and 180+10, one compressor call 300+30.
EPISODE_USAGE = {"input_tokens": 600, "output_tokens": 60, "total_tokens": 660}


def start_mlflow_server(target: UiTarget, port: int) -> subprocess.Popen:
    """A real `mlflow server` for `target` on 127.0.0.1:`port`, healthy, in its own process group (so a test
    can stop or kill it with its workers); stopped again if it never becomes healthy."""
    process = subprocess.Popen(
        server_command(target, port),
        env=server_env(),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_healthy(f"http://{HOST}:{port}", process)
    except BaseException:
        stop(process)
        raise
    return process
