"""The tracker a job gets: the MLflow one on the job's store, or the no-op `Tracker` when tracking is off."""

from __future__ import annotations

from pathlib import Path

from optimizer.config import ExperimentConfig, TrackingConfig
from optimizer.tracking.base import Tracker
from optimizer.tracking.outage import fail_fast
from optimizer.tracking.store import check_reachable, resolve_store


def open_tracker(
    config: TrackingConfig, job_dir: Path, experiment: str, *, prompt_prefix: str | None = None
) -> Tracker:
    """An MLflow tracker on the job's store, or the no-op `Tracker` when tracking is disabled."""
    if not config.enabled:
        return Tracker()
    store = resolve_store(config, job_dir)
    check_reachable(store)
    fail_fast(store)
    from optimizer.tracking.mlflow_tracker import MlflowTracker

    return MlflowTracker(store, job_dir, experiment, traces=config.traces, prompt_prefix=prompt_prefix)


def tracker_from_config(config: ExperimentConfig) -> Tracker:
    """The tracker of an experiment config: its output directory, `tracking.experiment` or its name."""
    return open_tracker(config.tracking, config.out_dir, config.tracking.experiment or config.name)
