"""`<job_dir>/mlflow_run.json`: which parent run each job of this directory logs to, so a rerun resumes it.

A store inside the job directory is also recorded relative to it (`store`), and read back from where the
directory is now: a job directory copied or moved elsewhere opens, resumes and exports from its own copy,
not from the store it was first written to.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from optimizer.jsontypes import JSONObject, dict_of, record, text
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
            data = record(json.loads((job_dir / STATE_FILE).read_text()))
            uri = text(data["tracking_uri"])
            relative = data.get("store")
            if isinstance(relative, str) and (job_dir / relative).is_file():
                uri = f"sqlite:///{(job_dir / relative).resolve()}"
            experiment = text(data.get("experiment", ""))
            return cls(uri, str(data["experiment_id"]), experiment, dict_of(data.get("runs", {}), text))
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
    runs.pop(job, None)  # re-inserted last: the order is the order jobs last logged (`acon ui` opens the last)
    runs[job] = run_id
    state: JSONObject = {
        "tracking_uri": tracking_uri,
        "experiment_id": experiment_id,
        "experiment": experiment,
        "runs": runs,
    }
    if tracking_uri.startswith("sqlite:///"):
        database = Path(tracking_uri.removeprefix("sqlite:///")).resolve()
        if database.is_relative_to(job_dir.resolve()):
            state["store"] = database.relative_to(job_dir.resolve()).as_posix()
    atomic_write_json(job_dir / STATE_FILE, state)
