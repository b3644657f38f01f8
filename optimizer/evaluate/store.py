"""Episode storage: one JSON line per finished episode, written as it finishes.

A crash loses at most the episodes still running. Reloading skips what is done, so a rerun resumes.
A task may have several records (an episode that hit an infrastructure error is run again); the newest
record of each task is the one that counts. The same records export to Parquet through `datasets`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from optimizer.agent.episode import Episode
from optimizer.evaluate.codec import decode_episode, encode_episode
from optimizer.evaluate.records import EpisodeSummary
from optimizer.storage import JsonlLog


class EpisodeStore:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._log = JsonlLog(directory / "episodes.jsonl")

    def records(self) -> list[dict[str, Any]]:
        """Every record in the order written, superseded ones included."""
        return self._log.read()

    def latest(self) -> list[dict[str, Any]]:
        """The newest record of each task, in the order tasks were first recorded."""
        return latest_per_task(self.records())

    def history(self) -> list[Episode]:
        """Every episode in the order written, superseded ones included."""
        return [decode_episode(r, where=self.directory) for r in self.records() if isinstance(r.get("task_id"), str)]

    def load(self) -> list[Episode]:
        return [decode_episode(r, where=self.directory) for r in self.latest()]

    def episode_at(self, offset: int) -> Episode:
        """The episode whose record starts at byte `offset` of the log."""
        return decode_episode(self._log.read_at(offset), where=self.directory)

    @property
    def log(self) -> JsonlLog:
        return self._log

    def index(self) -> tuple[dict[str, int], dict[str, EpisodeSummary]]:
        """Per task, the byte offset and summary of its newest record, reading one record at a time."""
        offsets: dict[str, int] = {}
        summaries: dict[str, EpisodeSummary] = {}
        for offset, record in self._log.scan():
            task_id = record.get("task_id")
            if isinstance(task_id, str):
                offsets[task_id] = offset
                summaries[task_id] = EpisodeSummary.of_record(record, where=self.directory)
        return offsets, summaries

    def done_ids(self) -> set[str]:
        """Tasks with a final episode: an infrastructure error is not final, the task runs again."""
        return {r["task_id"] for r in self.latest() if r["outcome"] != "infra_error"}

    def append(self, episode: Episode) -> int:
        """Record a finished episode; returns the record's byte offset."""
        return self._log.append(encode_episode(episode))

    def export_parquet(self, path: Path | None = None) -> Path:
        from optimizer.evaluate.dataset import episodes_dataset

        path = path or self.directory / "episodes.parquet"
        episodes_dataset(self.load()).to_parquet(str(path))
        return path


def latest_per_task(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    newest: dict[str, dict[str, Any]] = {}
    for record in records:
        if isinstance(record.get("task_id"), str):
            newest[record["task_id"]] = record
    return list(newest.values())


def write_meta(directory: Path, meta: dict[str, Any]) -> None:
    from optimizer.storage import atomic_write_json

    atomic_write_json(directory / "meta.json", meta)


def read_meta(directory: Path) -> dict[str, Any] | None:
    """The run's meta.json; None when absent or unreadable (a damaged file is rewritten, never half-read)."""
    try:
        meta = json.loads((directory / "meta.json").read_text())
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    return meta if isinstance(meta, dict) else None
