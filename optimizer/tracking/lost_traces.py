"""Trace writes MLflow gave up on, counted so acon reports them in one line; MLflow's own lines hidden unless -v.

MLflow exports traces from background threads and a failed write never reaches the caller: the exporter
logs a warning (the trace's info, tags and assessments: "Failed to send trace ..."), or only a debug line
(a batch of spans), and drops it; the sqlite store first logs the database error with a full traceback.
Those log records are the only signal there is, so they are what is counted. Without `-v` they are kept
off the terminal: acon says it once, counted, when the tracker flushes (`MlflowTracker.flush`).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

EXPORT_LOGGER = "mlflow.tracing.export.mlflow_v3"
QUEUE_LOGGER = "mlflow.tracing.export.async_export_queue"
STORE_LOGGER = "mlflow.store.db.utils"
# (logger, how the message starts) of each record that means a trace write was dropped.
LOSSES = (
    (EXPORT_LOGGER, "Failed to send trace to MLflow backend"),  # start_trace: info, tags, assessments
    (EXPORT_LOGGER, "Failed to log span to MLflow backend"),  # log_spans, at DEBUG
    (QUEUE_LOGGER, "Trace export queue is full"),  # traces discarded before any write
    (QUEUE_LOGGER, "Failed to log "),  # a task that raised out of its handler
)
# The store's traceback of a database error that a caller above it handles or raises (counted there).
STORE_ERROR = "SQLAlchemy database error"


@dataclass
class Losses:
    """Trace writes dropped in this process, and the last error, short."""

    count: int = 0
    last: str = ""


_losses = Losses()
_lock = threading.Lock()
_installed = False


def losses() -> Losses:
    with _lock:
        return Losses(_losses.count, _losses.last)


def verbose() -> bool:
    """Whether MLflow's INFO lines are shown (`acon -v`, or MLflow's own default outside the CLI)."""
    return logging.getLogger("mlflow").getEffectiveLevel() <= logging.INFO


class _Counter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        lost = any(record.name == name and message.startswith(start) for name, start in LOSSES)
        if lost:
            with _lock:
                _losses.count += 1
                _losses.last = _short(message)
        if record.levelno < logging.getLogger("mlflow").getEffectiveLevel():
            return False  # a debug record let through only to be counted
        if lost or (record.name == STORE_LOGGER and message.startswith(STORE_ERROR)):
            return verbose()
        return True


def count_lost_traces() -> None:
    """Install the counter on MLflow's export and store loggers (once per process)."""
    global _installed
    with _lock:
        if _installed:
            return
        counter = _Counter()
        for name in (EXPORT_LOGGER, QUEUE_LOGGER, STORE_LOGGER):
            logging.getLogger(name).addFilter(counter)
        # A dropped span batch is only logged at DEBUG: the record has to exist to be counted.
        logging.getLogger(EXPORT_LOGGER).setLevel(logging.DEBUG)
        _installed = True


def _short(message: str) -> str:
    """The error of a loss record in a few words: its first line, after MLflow's lead-in."""
    first = message.strip().splitlines()[0] if message.strip() else ""
    text = first.split(": ", 1)[-1] if ": " in first else first
    return text if len(text) <= 120 else text[:119] + "…"
