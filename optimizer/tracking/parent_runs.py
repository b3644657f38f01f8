"""`<job_dir>/mlflow_run.json`: which parent run each job of this directory logs to, so a rerun resumes it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optimizer.storage import atomic_write_json

STATE_FILE = "mlflow_run.json"


@dataclass(frozen=True)
class ParentRuns:
    """Tracking's record of a job directory: its store and experiment, and the parent run id per job name
    (not the search's checkpoint, which is `optimizer.search.state.SearchState`)."""

    tracking_uri: str
    experiment_id: str
    experiment: str
    runs: dict[str, str]

    @classmethod
    def read(cls, job_dir: Path) -> ParentRuns | None:
        try:
            data: dict[str, Any] = json.loads((job_dir / STATE_FILE).read_text())
            return cls(
                data["tracking_uri"], str(data["experiment_id"]), data.get("experiment", ""), dict(data.get("runs", {}))
            )
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            return None

    def run_for(self, tracking_uri: str, experiment_id: str, job: str) -> str | None:
        if (self.tracking_uri, self.experiment_id) != (tracking_uri, experiment_id):
            return None
        return self.runs.get(job)


def remember_run(
    job_dir: Path, *, tracking_uri: str, experiment_id: str, experiment: str, job: str, run_id: str
) -> None:
    """Record `job → run_id`, keeping other jobs' entries unless the store or experiment changed."""
    current = ParentRuns.read(job_dir)
    runs = (
        dict(current.runs)
        if current and (current.tracking_uri, current.experiment_id) == (tracking_uri, experiment_id)
        else {}
    )
    runs[job] = run_id
    atomic_write_json(
        job_dir / STATE_FILE,
        {
            "tracking_uri": tracking_uri,
            "experiment_id": experiment_id,
            "experiment": experiment,
            "runs": runs,
        },
    )
