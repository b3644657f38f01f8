"""SIGTERM as a clean exit, for the CLI and for the benchmark scripts that start model servers."""

from __future__ import annotations

import signal


def _exit_on_sigterm(signum: int, frame: object) -> None:
    # SystemExit unwinds the `with` blocks, so servers this process started are stopped and state is saved;
    # Python's default for SIGTERM ends the process at once and leaves them running.
    raise SystemExit(128 + signum)


def exit_cleanly_on_sigterm() -> None:
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
