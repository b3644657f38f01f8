"""SIGTERM and Ctrl-C as a clean exit within seconds, for the CLI and for the benchmark scripts.

The signal unwinds the main thread like an exception, so `with` blocks stop the servers this process started
and save its state. Threads waiting on a model call would otherwise hold the exit until their call ends
(minutes, on a slow local model): a call made through `cancellable` is abandoned as soon as the process is
stopping, its thread raises `Interrupted`, and the episode it belonged to is never recorded (a rerun runs it).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

T = TypeVar("T")

POLL_S = 0.1  # how soon a waiting thread notices the process is stopping
_stopping = threading.Event()  # only ever set and read, never waited on: a signal handler may set it safely
_installed = False


class Interrupted(KeyboardInterrupt):
    """A thread's wait was cut short because the process is stopping (a BaseException: no `except Exception`
    on the way up records it as a failed call or a failed episode)."""


def stopping() -> bool:
    return _stopping.is_set()


def check() -> None:
    """Raise `Interrupted` if the process is stopping."""
    if _stopping.is_set():
        raise Interrupted


def _on_signal(signum: int, frame: object) -> None:
    _stopping.set()
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    # Python's default for SIGTERM ends the process at once and leaves the servers it started running.
    raise SystemExit(128 + signum)


def exit_cleanly_on_sigterm() -> None:
    """Install the handlers: SIGTERM raises `SystemExit(143)`, Ctrl-C `KeyboardInterrupt`, and either one
    cancels every call made through `cancellable`."""
    global _installed
    signal.signal(signal.SIGTERM, _on_signal)
    # A shell's background job starts with SIGINT ignored; it stays ignored.
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, _on_signal)
    _installed = True


def exit_now(code: int) -> NoReturn:
    """End a process that a signal has unwound: the exit handlers run and the streams are flushed, then it
    exits with `code` at once, without tearing the interpreter down.

    The teardown (every module cleared, the heap garbage-collected, about 0.5 s of CPU after `acon run`)
    leaves nothing behind that the unwinding did not already save, and on a loaded machine it was most of the
    exit: 3-8 s after the interrupted line, at load 12 on 2 cores. Threads still blocked on a model call are
    abandoned, as `cancellable` promises.
    """
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed or broken pipe has nothing left to flush to
            stream.flush()
    os._exit(code)


def cancellable(call: Callable[[], T]) -> T:
    """`call()`, abandoned with `Interrupted` once the process is stopping.

    The call runs on a daemon thread, which is left blocked on its socket and dies with the process (a
    blocking HTTP read cannot be cut short from another thread). Without the handlers installed (acon used as
    a library) the process never stops this way, and the call runs on the caller's thread.
    """
    if not _installed:
        return call()
    check()
    done = threading.Event()
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed to the caller, which re-raises it on its own thread
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="acon-call", daemon=True).start()
    while not done.wait(POLL_S):
        check()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def sleep(seconds: float) -> None:
    """`time.sleep`, cut short with `Interrupted` once the process is stopping (a retry's backoff, a 429's pause)."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        check()
        time.sleep(min(left, POLL_S))
    check()
