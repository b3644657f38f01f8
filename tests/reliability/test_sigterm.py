"""SIGTERM unwinds like an exception, so a job's servers are stopped and its state saved; Python's default
ends the process at once and leaves the model servers it started running."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

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
