"""SIGTERM and Ctrl-C as a clean exit within seconds, for the CLI and for the benchmark scripts (`run_main`).

The signal unwinds the main thread like an exception, so `with` blocks stop the servers this process started
and save its state. Threads waiting on a model call would otherwise hold the exit until their call ends
(minutes, on a slow local model): a call made through `cancellable` is abandoned as soon as the process is
stopping, its thread raises `Interrupted`, and the episode it belonged to is never recorded (a rerun runs it).

Python runs a signal's handler only when the main thread is back in the interpreter, so a main thread held in
C code (a write waiting on another connection's sqlite lock, up to two minutes) would not even start to stop.
A watcher thread hears the signal as it arrives (`signal.set_wakeup_fd`): the process is stopping from that
moment, and a cleanup still running `EXIT_DEADLINE_S` later is abandoned, as it is at once on a second
signal. What a job must not lose is on disk before that (episodes as they finish, state written whole); what
the cleanup would still have done is logging, which a rerun does again, and stopping the model servers this
process started: those get a last word (`on_abandon`) that signals them without waiting on any lock.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

from optimizer.errors import AconError

T = TypeVar("T")

POLL_S = 0.1  # how soon a waiting thread notices the process is stopping
# After a signal, the longest the cleanup may take before the process exits without it. Stopping the model
# servers it started takes up to 10 s each (`llm.local.server`); everything else takes a second or two.
EXIT_DEADLINE_S = 25.0
# How long the exit handlers (MLflow's trace export queue drains itself there) may run after a signal.
EXIT_HANDLERS_S = 3.0
_stopping = threading.Event()  # only ever set and read, never waited on: a signal handler may set it safely
_deadline_started = threading.Lock()
_installed = False
_watching = False
# Run just before an abandoned cleanup exits: each must return at once and take no lock the stuck main thread
# may hold (it signals, it does not wait).
_last_words: list[Callable[[], None]] = []


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
    _begin_stopping(signum)
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
    _watch_signals()


def run_main(main: Callable[[], int | None], name: str) -> NoReturn:
    """Run a script's `main` the one way every benchmark does: SIGTERM stops it cleanly (the model servers it
    started are stopped on the way out), what `main` returns is the exit code, and an `AconError` (an endpoint
    outage, a config it cannot use) ends it in one line naming the script, with the error's exit code, not a
    traceback: what it stored stays, and a rerun resumes."""
    exit_cleanly_on_sigterm()
    try:
        code = main()
    except AconError as error:
        print(f"{name}: {error}", file=sys.stderr)
        raise SystemExit(error.exit_code) from None
    raise SystemExit(code)


def _begin_stopping(signum: int) -> None:
    """From the first signal on: calls are cancelled, and the cleanup has `EXIT_DEADLINE_S` to finish."""
    _stopping.set()
    if _deadline_started.acquire(blocking=False):  # once per process, whichever thread hears it first
        threading.Thread(target=_abandon_after, args=(signum,), name="acon-exit-deadline", daemon=True).start()


def _abandon_after(signum: int) -> None:
    time.sleep(EXIT_DEADLINE_S)
    _abandon(signum, f"the cleanup did not finish within {EXIT_DEADLINE_S:g} s of the signal")


def on_abandon(callback: Callable[[], None]) -> Callable[[], None]:
    """Run `callback` if this process exits without its cleanup (the deadline, a second signal). Returns the
    function that takes it back (once the cleanup it stands in for has run)."""
    _last_words.append(callback)

    def withdraw() -> None:
        with contextlib.suppress(ValueError):
            _last_words.remove(callback)

    return withdraw


def _abandon(signum: int, why: str) -> NoReturn:
    # os.write: the main thread may hold sys.stderr's lock, stuck where the cleanup is.
    with contextlib.suppress(OSError):
        os.write(2, f"acon: interrupted; {why}, exiting without it (a rerun resumes)\n".encode())
    for callback in list(_last_words):
        with contextlib.suppress(Exception):  # one failed last word must not keep the process from exiting
            callback()
    os._exit(128 + signum)


def _watch_signals() -> None:
    """Hear SIGTERM and Ctrl-C on a thread of their own as they arrive, whatever the main thread is doing."""
    global _watching
    if _watching or threading.current_thread() is not threading.main_thread():
        return
    heard, wakeup = socket.socketpair()
    wakeup.setblocking(False)
    signal.set_wakeup_fd(wakeup.fileno(), warn_on_full_buffer=False)
    threading.Thread(target=_watch, args=(heard, wakeup), name="acon-signals", daemon=True).start()
    _watching = True


def _watch(heard: socket.socket, wakeup: socket.socket) -> None:
    # `wakeup` is held here so the descriptor Python writes signal numbers to stays open.
    seen = 0
    while chunk := heard.recv(64):
        for signum in chunk:
            if signal.getsignal(signum) is not _on_signal:
                continue  # a signal another handler owns (a library's, or `acon ui` stopping its server)
            seen += 1
            if seen > 1:
                _abandon(signum, "a second signal")
            _begin_stopping(signum)


def exit_now(code: int) -> NoReturn:
    """End a process that a signal has unwound: the exit handlers run and the streams are flushed, then it
    exits with `code` at once, without tearing the interpreter down.

    The teardown (every module cleared, the heap garbage-collected, about 0.5 s of CPU after `acon run`)
    leaves nothing behind that the unwinding did not already save, and on a loaded machine it was most of the
    exit: 3-8 s after the interrupted line, at load 12 on 2 cores. Threads still blocked on a model call are
    abandoned, as `cancellable` promises. The exit handlers get `EXIT_HANDLERS_S`: MLflow's drain every trace
    still queued for export (one write at a time, each waiting on the store's lock), which a rerun logs again.
    """
    handlers = threading.Thread(target=atexit._run_exitfuncs, name="acon-exit-handlers", daemon=True)
    handlers.start()
    handlers.join(EXIT_HANDLERS_S)
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
