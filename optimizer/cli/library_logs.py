"""Third-party log lines stay out of acon's output unless `acon -v` asks for them.

MLflow logs at INFO to stderr from the moment it is imported ("Creating initial MLflow database tables",
"Flushing the async trace logging queue") and draws its own progress bars when a rerun reads artifacts
back; beside acon's own progress lines they read as acon's and bury them. Warnings and errors still
show: a library in trouble is never silenced.
"""

from __future__ import annotations

import logging
import os

# The loggers of libraries acon drives; MLflow reads its level from the environment when imported.
LIBRARIES = ("mlflow", "alembic", "dspy", "LiteLLM", "litellm", "httpx", "datasets", "ray")
_verbose = False


def show_library_logs(verbose: bool) -> None:
    """INFO and up from the libraries when `verbose`, else only their warnings and errors.

    Call before the libraries are imported; what the user set in MLflow's own variables is kept.
    """
    global _verbose
    _verbose = verbose
    level = logging.INFO if verbose else logging.WARNING
    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", logging.getLevelName(level))
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", str(verbose).lower())
    for name in LIBRARIES:
        logging.getLogger(name).setLevel(level)


def library_logs_shown() -> bool:
    """Whether `acon -v` asked for the libraries' lines (and so for a child server's own output)."""
    return _verbose
