"""Episode storage: one JSON line per finished episode, written as it finishes.

A crash loses at most the episodes still running. Reloading skips what is done, so a rerun resumes.
The same records export to Parquet through `datasets` for analysis.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from optimizer.agent.episode import Episode
from optimizer.storage import JsonlLog


class EpisodeStore:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._log = JsonlLog(directory / "episodes.jsonl")

    def load(self) -> list[Episode]:
        return [Episode.from_dict(r) for r in self._log.read()]

    def done_ids(self) -> set[str]:
        return {e.task_id for e in self.load()}

    def append(self, episode: Episode) -> None:
        self._log.append(episode.to_dict())

    def export_parquet(self, path: Path | None = None) -> Path:
        from optimizer.evaluate.dataset import episodes_dataset

        path = path or self.directory / "episodes.parquet"
        episodes_dataset(self.load()).to_parquet(str(path))
        return path


def write_meta(directory: Path, meta: dict[str, Any]) -> None:
    from optimizer.storage import atomic_write_json

    atomic_write_json(directory / "meta.json", meta)


def read_meta(directory: Path) -> dict[str, Any] | None:
    try:
        return json.loads((directory / "meta.json").read_text())
    except FileNotFoundError:
        return None
