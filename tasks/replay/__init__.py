"""Replay suites: a user's recorded successful runs, or any stored suite, replayed for tier-0 screening.

- `mlflow_traces`: the same runs read from an MLflow experiment's traces (`mlflow.openai.autolog()`).
- `trajectories`: the JSON Lines format of recorded runs (OpenAI chat messages, one run per line) and
  its conversion into tasks; the format is documented there.
- `store`: the Parquet layout (one row per task, through `datasets`) shared by import and export.
- `env`: the replay environment and its checker.
- `suite`: `ReplaySuite` (`[suite] type = "replay"`), import into `suites/`, the stored suites' names.
"""

from tasks.replay.store import read_parquet, stored_from_suite, write_parquet
from tasks.replay.suite import DEFAULT_DIR, ReplaySuite, import_mlflow_traces, import_trajectories
from tasks.replay.trajectories import read_trajectories

__all__ = [
    "DEFAULT_DIR",
    "ReplaySuite",
    "import_mlflow_traces",
    "import_trajectories",
    "read_parquet",
    "read_trajectories",
    "stored_from_suite",
    "write_parquet",
]
