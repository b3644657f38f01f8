"""A runtime built from a guideline registered in MLflow's prompt registry (`NAME@ALIAS`)."""

from __future__ import annotations

import pytest

from optimizer.context.guideline import read_guideline
from optimizer.errors import ConfigError
from optimizer.runtime import ContextRuntime
from optimizer.tracking.mlflow_tracker import MlflowTracker
from optimizer.tracking.store import job_store


def test_runtime_loads_the_aliased_guideline(job_dir):
    store = job_store(job_dir)
    tracker = MlflowTracker(store, job_dir, "runtime")
    learned = read_guideline("guidelines/learned/bfcl_long_context.md")
    with tracker.job_run("optimize", params={}, tags={}):
        tracker.register_guideline(read_guideline("guidelines/seed/seed.md"))
        tracker.set_best(learned)
    tracker.flush()
    runtime = ContextRuntime("acon-runtime@best", tracking_uri=store.uri, retention={"read_doc": "static"})
    assert runtime.strategy.version() == learned.version
    sent = runtime.compact([{"role": "user", "content": "hi"}])
    assert sent == [{"role": "user", "content": "hi"}]
    with pytest.raises(ConfigError):
        ContextRuntime("acon-runtime@nosuchalias", tracking_uri=store.uri)
