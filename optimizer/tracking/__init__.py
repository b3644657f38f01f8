"""MLflow tracking of acon jobs: runs, metrics per round, artifacts, episode traces, registered guidelines.

```python
tracker = tracker_from_config(config)              # or open_tracker(config.tracking, job_dir, name)
with tracker.job_run("optimize", params=experiment_params(config), tags=experiment_tags(config)):
    with tracker.child_run("round/01", "round 1"):
        tracker.log_metrics({"success": 0.8, "peak_tokens_mean": 3100}, step=1)
        tracker.trace_episode(episode)
    tracker.set_best(guideline)
```
`Tracker` itself is the disabled tracker (every method a no-op); `MlflowTracker` (imported only when
tracking is on) is the real one. `tracker_for(config)` / `tracked_job(config, name)` wrap it as the subscriber
to the events of `acon optimize` / `acon run|compare` (`optimizer.search.events`; see `hooks`);
`load_from_registry` reads a guideline back.
"""

from __future__ import annotations

from optimizer.context.guideline import Guideline
from optimizer.tracking.base import Tracker
from optimizer.tracking.hooks import JobTracking, OptimizeTracking, tracked_job, tracker_for
from optimizer.tracking.opening import open_tracker, tracker_from_config
from optimizer.tracking.outage import TrackingBehind, check_caught_up
from optimizer.tracking.params import experiment_params, experiment_tags
from optimizer.tracking.pareto import ParetoPoint, front_labels
from optimizer.tracking.store import Store, job_store, resolve_store, resolve_uri


def load_from_registry(ref: str, tracking_uri: str | None = None, *, provenance: bool = False) -> Guideline:
    """A registered guideline (`NAME@ALIAS`, `NAME/VERSION`); see `optimizer.context.prompt_registry`."""
    from optimizer.context.prompt_registry import load_from_registry as load

    return load(ref, tracking_uri, provenance=provenance)


__all__ = [
    "JobTracking",
    "OptimizeTracking",
    "ParetoPoint",
    "Store",
    "Tracker",
    "TrackingBehind",
    "check_caught_up",
    "experiment_params",
    "experiment_tags",
    "front_labels",
    "job_store",
    "load_from_registry",
    "open_tracker",
    "resolve_store",
    "resolve_uri",
    "tracked_job",
    "tracker_for",
    "tracker_from_config",
]
