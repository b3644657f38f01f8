"""Install the pinned bfcl-eval for the BFCL suites (called by `acon setup`).

`--no-deps` on purpose: bfcl-eval declares torch, sentence-transformers, faiss and half a dozen
vendor SDKs, none of which the multi-turn simulators and checker use. Their only extra need is
`mpmath` (MathAPI).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import subprocess
import sys
from collections.abc import Callable

from optimizer.errors import AconError

BFCL_EVAL_VERSION = "2026.3.23"
REQUIREMENTS = (
    ("--no-deps", f"bfcl-eval=={BFCL_EVAL_VERSION}"),
    ("mpmath==1.3.0",),
)

Log = Callable[[str], None]


def installed_version() -> str | None:
    """The installed bfcl-eval version, or None when `bfcl_eval` cannot be imported."""
    if importlib.util.find_spec("bfcl_eval") is None:
        return None
    try:
        return importlib.metadata.version("bfcl-eval")
    except importlib.metadata.PackageNotFoundError:
        return None


def ready() -> bool:
    return installed_version() == BFCL_EVAL_VERSION and importlib.util.find_spec("mpmath") is not None


def ensure_installed(log: Log = print) -> None:
    """Install bfcl-eval (without its dependencies) and mpmath with this interpreter's pip if needed."""
    if ready():
        return
    for args in REQUIREMENTS:
        log(f"installing {args[-1]}")
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *args]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            lines = (done.stderr or done.stdout).strip().splitlines()
            raise AconError(f"pip install {args[-1]} failed: {lines[-1] if lines else 'no output'}")
    importlib.invalidate_caches()
    if not ready():
        raise AconError(f"bfcl-eval=={BFCL_EVAL_VERSION} still not importable after installing it")
    log(f"bfcl-eval {BFCL_EVAL_VERSION} ready")
