"""Replay suites: a user's recorded successful runs, or any stored suite, replayed for tier-0 screening.

- `mlflow_traces`: the same runs read from an MLflow experiment's traces (`mlflow.openai.autolog()`).
- `trajectories`: the JSON Lines format of recorded runs (OpenAI chat messages, one run per line) and
  its conversion into tasks; the format is documented there.
- `store`: the Parquet layout (one row per task, through `datasets`) shared by import and export.
- `env`: the replay environment and its checker.
- `suite`: `ReplaySuite` (`[suite] type = "replay"`), import into `suites/`, registration by name.
"""

from tasks.replay.store import read_parquet, stored_from_suite, write_parquet
from tasks.replay.suite import DEFAULT_DIR, ReplaySuite, import_mlflow_traces, import_trajectories, register_stored
from tasks.replay.trajectories import read_trajectories

register_stored()

__all__ = [
    "DEFAULT_DIR",
    "ReplaySuite",
    "import_mlflow_traces",
    "import_trajectories",
    "read_parquet",
    "read_trajectories",
    "register_stored",
    "stored_from_suite",
    "write_parquet",
]
