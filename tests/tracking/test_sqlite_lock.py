"""A job's sqlite store locked by another writer: traces and metrics wait their turn, none is lost, and MLflow's
"database is locked" tracebacks stay off acon's output; a write that still fails is counted in one acon line.

The lock is held by a second connection (`BEGIN EXCLUSIVE`), as a busy writer holds it under load: the same
failure as on a loaded machine, without depending on the machine's load.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import text

from optimizer.tracking import lost_traces
from optimizer.tracking import store as stores
from optimizer.tracking.mlflow_tracker import LOST_TAG, MlflowTracker
from optimizer.tracking.store import job_store
from optimizer.tracking.traces import EPISODE_TAG
from tests.tracking.conftest import make_episode

MLFLOW_BUSY_TIMEOUT_S = 20  # what MLflow sets on each sqlite session (mlflow/store/db/utils.py)


@contextmanager
def locked(db: Path, seconds: float) -> Iterator[threading.Thread]:
    """Hold an exclusive lock on `db` from another connection for `seconds`, in the background."""
    taken = threading.Event()

    def hold() -> None:
        connection = sqlite3.connect(db, timeout=30, isolation_level=None)
        connection.execute("BEGIN EXCLUSIVE")
        taken.set()
        time.sleep(seconds)
        connection.execute("COMMIT")
        connection.close()

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert taken.wait(30)
    try:
        yield holder
    finally:
        holder.join()


@pytest.fixture
def quiet_mlflow() -> Iterator[None]:
    """MLflow's loggers as `acon` without `-v` leaves them (`show_library_logs(False)`)."""
    logger = logging.getLogger("mlflow")
    level = logger.level
    logger.setLevel(logging.WARNING)
    yield
    logger.setLevel(level)


def stored_episodes(tracker: MlflowTracker) -> set[str]:
    traces = tracker.client.search_traces(locations=[tracker.experiment_id], include_spans=False, max_results=100)
    return {t.info.tags[EPISODE_TAG].split("|")[0] for t in traces if EPISODE_TAG in t.info.tags}


def test_writes_wait_out_a_lock_longer_than_mlflows_timeout(job_dir, tmp_path, capfd, quiet_mlflow):
    """Today's failure: MLflow waits 20 s for a locked sqlite file, then drops the trace with a traceback."""
    tracker = MlflowTracker(job_store(job_dir), tmp_path, "locked-store")
    with tracker.job_run("optimize") as run_id:
        tracker.trace_episode(make_episode("before"))
        tracker.flush()
        with locked(job_dir / "mlflow.db", MLFLOW_BUSY_TIMEOUT_S + 2):
            for task in ("t-1", "t-2"):
                tracker.trace_episode(make_episode(task))
            tracker.log_metrics({"success": 1.0}, step=1)  # the main thread's write, waiting too
            tracker.flush()
    assert stored_episodes(tracker) == {"before", "t-1", "t-2"}
    assert [m.value for m in tracker.client.get_metric_history(run_id, "success")] == [1.0]
    assert LOST_TAG not in tracker.client.get_run(run_id).data.tags
    err = capfd.readouterr().err
    assert "database is locked" not in err and "Traceback" not in err, err


def test_the_store_waits_long_and_exports_from_one_thread(job_dir, tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_ASYNC_TRACE_LOGGING_MAX_WORKERS", raising=False)
    tracker = MlflowTracker(job_store(job_dir), tmp_path, "patient-store")
    assert os.environ["MLFLOW_ASYNC_TRACE_LOGGING_MAX_WORKERS"] == "1"
    with tracker.client._tracking_client.store.ManagedSessionMaker() as session:
        busy_ms = session.execute(text("PRAGMA busy_timeout")).scalar()
    assert busy_ms == stores.SQLITE_BUSY_TIMEOUT_S * 1000 > MLFLOW_BUSY_TIMEOUT_S * 1000


def test_a_write_that_still_fails_is_counted_in_one_acon_line(
    job_dir, tmp_path, monkeypatch, capfd, caplog, quiet_mlflow
):
    monkeypatch.setattr(stores, "SQLITE_BUSY_TIMEOUT_S", 0.5)
    tracker = MlflowTracker(job_store(job_dir), tmp_path, "lost-writes")
    before = lost_traces.losses().count
    with tracker.job_run("optimize") as run_id:
        with locked(job_dir / "mlflow.db", 6):
            tracker.trace_episode(make_episode("lost"))
            deadline = time.monotonic() + 30
            while lost_traces.losses().count == before and time.monotonic() < deadline:
                time.sleep(0.1)
        lost = lost_traces.losses().count - before
        assert lost >= 1
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="optimizer"):
            tracker.flush()
            tracker.flush()  # reported once
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("optimizer")]
    assert len(lines) == 1, lines
    assert f"{lost} trace write(s)" in lines[0] and "database is locked" in lines[0] and "0.5 s" in lines[0]
    assert tracker.client.get_run(run_id).data.tags[LOST_TAG] == str(lost)
    err = capfd.readouterr().err
    assert "mlflow" not in err and "Traceback" not in err, err
