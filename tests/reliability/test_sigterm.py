"""SIGTERM unwinds like an exception, so a job's servers are stopped and its state saved; Python's default
ends the process at once and leaves the model servers it started running."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

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
