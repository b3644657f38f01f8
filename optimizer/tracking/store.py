"""Where a job's MLflow data lives: a sqlite file in the job directory unless a URI is configured.

Precedence: `tracking.uri` in the config, then `MLFLOW_TRACKING_URI`, then `sqlite:///<job_dir>/mlflow.db`
with artifacts in `<job_dir>/mlartifacts`. A remote server (http, databricks) keeps its own artifact
root; any other store gets the job's artifact directory, fixed explicitly when the experiment is created
(MLflow would otherwise resolve it against whatever the working directory happens to be).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from optimizer.config import TrackingConfig

DB_NAME = "mlflow.db"
ARTIFACTS_DIR = "mlartifacts"


@dataclass(frozen=True)
class Store:
    """A resolved tracking store: the URI, and the artifact root for new experiments (None: the server's)."""

    uri: str
    artifact_root: Path | None

    @property
    def artifact_location(self) -> str | None:
        return self.artifact_root.as_uri() if self.artifact_root is not None else None

    @property
    def is_remote(self) -> bool:
        return urlsplit(self.uri).scheme in ("http", "https", "databricks")


def sqlite_uri(path: Path) -> str:
    return f"sqlite:///{path.resolve()}"


def job_store(job_dir: Path) -> Store:
    """The default store of a job directory."""
    job_dir = job_dir.resolve()
    return Store(sqlite_uri(job_dir / DB_NAME), job_dir / ARTIFACTS_DIR)


def resolve_store(config: TrackingConfig, job_dir: Path) -> Store:
    uri = config.uri or os.environ.get("MLFLOW_TRACKING_URI", "")
    if not uri:
        return job_store(job_dir)
    store = Store(uri, None)
    if store.is_remote:
        return store
    if uri.startswith("sqlite:///"):
        # Artifacts beside the database file, so a store moved or copied keeps them.
        database = Path(uri.removeprefix("sqlite:///"))
        return Store(uri, database.resolve().parent / ARTIFACTS_DIR)
    return Store(uri, job_dir.resolve() / ARTIFACTS_DIR)


def resolve_uri(job_dir: Path) -> str:
    """The tracking URI a job directory logged to (its `mlflow_run.json`), else its default sqlite store."""
    from optimizer.tracking.state import JobState

    state = JobState.read(job_dir)
    return state.tracking_uri if state is not None else job_store(job_dir).uri
