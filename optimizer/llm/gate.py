"""How many requests may be in flight against one endpoint, and when none may: a gate shared by every caller.

A `ChatClient` enters its endpoint's gate around each request. `LocalGate` is shared by the threads of one
process; under the Ray executor every worker's client enters the same `RayGate` (one named actor per
endpoint), so ten workers with `concurrency = 2` still send two requests at a time, not twenty. A 429 with
`Retry-After` closes the gate for everyone for that long, instead of each caller retrying on its own.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from email.utils import parsedate_to_datetime
from typing import Any, Protocol

from optimizer import interrupts

MAX_PAUSE_S = 300.0  # a Retry-After longer than this is treated as this (a misconfigured server)


class Gate(Protocol):
    def slot(self) -> contextlib.AbstractContextManager[None]:
        """Held while one request is in flight."""

    def pause(self, seconds: float) -> None:
        """No new request may start for `seconds` (the server asked for it)."""


class LocalGate:
    """The gate of one process: a bounded count and a shared pause, for its threads."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._used = 0
        self._paused_until = 0.0
        self._ready = threading.Condition()

    @contextlib.contextmanager
    def slot(self) -> Iterator[None]:
        with self._ready:
            while True:
                wait = self._paused_until - time.monotonic()
                if wait <= 0 and self._used < self.limit:
                    break
                # Woken to check for a stop too: a caller waiting out a 429's pause would hold the exit.
                self._ready.wait(timeout=min(wait, interrupts.POLL_S) if wait > 0 else interrupts.POLL_S)
                interrupts.check()
            self._used += 1
        try:
            yield
        finally:
            with self._ready:
                self._used -= 1
                self._ready.notify()

    def pause(self, seconds: float) -> None:
        with self._ready:
            self._paused_until = max(self._paused_until, time.monotonic() + min(seconds, MAX_PAUSE_S))


def retry_after_s(exc: BaseException) -> float | None:
    """The seconds a 429 (or 503) reply's `Retry-After` header asks for: a number or an HTTP date."""
    response: Any = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
