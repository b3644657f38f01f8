"""BFCL multi-turn (bfcl-eval, Apache-2.0) as acon suites: `bfcl_base`, `bfcl_long_context`, ...

Importing this package never needs bfcl-eval; `BfclSuite.load()` raises a one-line `ConfigError`
pointing at `acon setup` when it is missing (`tasks.bfcl.install.ensure_installed` installs it).
"""

from tasks.bfcl.suite import BfclSuite

__all__ = ["BfclSuite"]
