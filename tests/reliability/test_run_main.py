"""`run_main`, the one way every benchmark script ends: its exit code is what `main` returns, an `AconError`
is one line naming the script, and SIGTERM unwinds so the model servers it started are stopped."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.conftest import ROOT

SCRIPT = textwrap.dedent(
    """
    import os, signal, time
    from optimizer.errors import ConfigError
    from optimizer.interrupts import run_main

    def main():
    {body}

    run_main(main, "bench_example")
    """
)


def run(body: str) -> subprocess.CompletedProcess:
    # A process of its own: run_main installs signal handlers and exits, neither of which pytest's may do.
    code = SCRIPT.format(body=textwrap.indent(textwrap.dedent(body), "    "))
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=30)


def test_an_acon_error_is_one_line_naming_the_script_with_the_errors_exit_code():
    done = run('raise ConfigError("no such suite: nope (experiments/x.toml)")')
    assert done.returncode == 2
    assert done.stderr == "bench_example: no such suite: nope (experiments/x.toml)\n"


def test_what_main_returns_is_the_exit_code():
    assert run("return 3").returncode == 3
    assert run("return 0").returncode == 0
    assert run("print('done')").returncode == 0  # a main that returns nothing succeeded


def test_sigterm_runs_the_cleanup_and_exits_143():
    done = run(
        """
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(10)
        finally:
            print("servers stopped", flush=True)
        """
    )
    assert done.returncode == 143, done.stderr
    assert done.stdout.strip() == "servers stopped"


def test_an_error_that_is_no_acon_error_keeps_its_traceback():
    # A bug in a benchmark is not something its user can fix: the traceback says where it is.
    done = run('raise KeyError("row")')
    assert done.returncode == 1 and "Traceback" in done.stderr and "KeyError" in done.stderr
