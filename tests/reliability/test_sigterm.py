"""SIGTERM unwinds like an exception, so a job's servers are stopped and its state saved; Python's default
ends the process at once and leaves the model servers it started running."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from optimizer.testing.stub_server import StubServer
from tests.reliability.test_interrupt_in_flight import Endpoint, experiment, launch

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import os, signal, time
    from optimizer.interrupts import exit_cleanly_on_sigterm
    {install}
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(10)
    finally:
        print("servers stopped", flush=True)
    """
)


def run(install: str) -> subprocess.CompletedProcess:
    code = SCRIPT.format(install=install)
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=30)


def test_sigterm_runs_the_cleanup_and_exits_143():
    done = run("exit_cleanly_on_sigterm()")
    assert done.returncode == 143 and done.stdout.strip() == "servers stopped"


def test_without_it_sigterm_skips_the_cleanup():
    done = run("")
    assert done.returncode == -15 and done.stdout == ""


def test_a_job_started_with_sigint_ignored_keeps_ignoring_it_and_sigterm_still_stops_it():
    # A shell without job control (a script, a CI run started with `&`) starts its background jobs so: Ctrl-C
    # at the terminal is not meant for them. A test that sends SIGINT must start its child with the default.
    code = textwrap.dedent(
        """
        import os, signal, time
        from optimizer.interrupts import exit_cleanly_on_sigterm
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        exit_cleanly_on_sigterm()
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)
        print("still running", flush=True)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(10)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert done.returncode == 143 and done.stdout.strip() == "still running", done.stderr


CLI = textwrap.dedent(
    """
    import os, signal
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # as a terminal starts a foreground job
    import optimizer.cli as cli

    class Teardown:
        def __del__(self, write=os.write):
            write(2, b"torn down\\n")

    sentinel = Teardown()  # freed only when the interpreter tears its modules down
    cli._register = lambda: os.kill(os.getpid(), signal.{sig})  # the signal arrives while the command runs
    cli.main()
    """
)


@pytest.mark.parametrize(("sig", "code"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_an_interrupted_command_exits_without_the_interpreter_teardown(sig, code):
    # The teardown took 3-8 s under load (a cold collection of the whole heap) after the interrupted line.
    script = CLI.format(sig=sig)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == code, done.stderr
    assert done.stderr.strip().splitlines() == ["acon: interrupted; finished episodes are saved, rerun to resume"]


# -------------------------------------------------------- an exit that something would hold (issue 30, item 13)


def test_a_tracked_run_exits_within_seconds_though_its_store_is_locked(tmp_path):
    # The job run's closing writes waited MLflow's sqlite lock out (120 s), then a traceback and exit 1; an
    # `acon optimize` on a loaded machine took 6-8 minutes to stop so.
    slow = Endpoint(slow=True)
    with StubServer(slow) as url:
        path = experiment(tmp_path, url, concurrency=2)
        path.write_text(path.read_text().replace("[tracking]\nenabled = false", "[tracking]\nenabled = true"))
        process = launch(path, tmp_path)
        try:
            assert slow.compressions.acquire(timeout=180), "the run never called the compressor"
            store = sqlite3.connect(tmp_path / "out" / "mlflow.db", timeout=60, isolation_level=None)
            store.execute("BEGIN EXCLUSIVE")  # another connection holds the store: every write waits
            sent = time.monotonic()
            process.send_signal(signal.SIGTERM)
            try:
                _, err = process.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                pytest.fail("still running 60 s after SIGTERM")
            took = time.monotonic() - sent
            store.rollback()
        finally:
            process.kill()
            slow.release.set()
    assert took < 12, f"exited {took:.1f} s after the signal"
    assert process.returncode == 143, err
    assert "Traceback" not in err, err
    assert err.strip().splitlines()[-1].startswith("acon: interrupted"), err


BLOCKED_IN_C = textwrap.dedent(
    """
    import sqlite3, sys, threading, time
    from optimizer import interrupts
    interrupts.EXIT_DEADLINE_S = {deadline}
    interrupts.exit_cleanly_on_sigterm()

    def say_when_stopping():
        while not interrupts.stopping():
            time.sleep(0.05)
        print("stopping", flush=True)

    threading.Thread(target=say_when_stopping, daemon=True).start()
    store = sqlite3.connect(sys.argv[1], timeout=120)
    print("writing", flush=True)
    store.execute("INSERT INTO t VALUES (1)")  # waits in C for the test's lock: no Python handler runs
    """
)


@pytest.mark.parametrize(("signals", "deadline", "says"), [(1, 2, "did not finish within 2 s"), (2, 120, "second")])
def test_a_signal_is_heard_while_the_main_thread_waits_in_c(tmp_path, signals, deadline, says):
    # Python runs its handler only once the main thread is back in the interpreter: here, after the sqlite wait.
    path = tmp_path / "store.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    script = BLOCKED_IN_C.format(deadline=deadline)
    process = subprocess.Popen(
        [sys.executable, "-c", script, str(path)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "writing"
        time.sleep(0.5)  # into the wait
        sent = time.monotonic()
        process.send_signal(signal.SIGTERM)
        assert process.stdout.readline().strip() == "stopping"  # at once, not once the wait is over
        if signals == 2:
            process.send_signal(signal.SIGTERM)
        try:
            _, err = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail("still running 30 s after SIGTERM")
        took = time.monotonic() - sent
    finally:
        process.kill()
        holder.rollback()
    assert process.returncode == 143, err
    assert took < deadline + 5 if signals == 1 else took < 5, f"exited {took:.1f} s after the signal"
    assert err.strip().startswith("acon: interrupted;") and says in err, err


def test_exit_handlers_that_hang_do_not_hold_the_exit():
    # MLflow's exit handler drains every trace still queued for export, one store write at a time.
    code = textwrap.dedent(
        """
        import atexit, os, signal, time
        from optimizer.interrupts import exit_cleanly_on_sigterm, exit_now
        atexit.register(time.sleep, 60)
        exit_cleanly_on_sigterm()
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(10)
        except SystemExit as exc:
            exit_now(exc.code)
        """
    )
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 143, done.stderr
    assert time.monotonic() - started < 15
