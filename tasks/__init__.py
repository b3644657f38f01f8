"""Task suites. Each suite module defines one `SuiteSource` subclass, registered as an entry point in the
`acon.suites` group of `pyproject.toml`; `SuiteConfig` is their union (`optimizer.world.suite.SUITES`).

Adding a suite: one module with a `SuiteSource` subclass (a `type` literal and its parameters) and one
entry point; `SuiteSource.named` gives the names `acon suites list` shows. See CONTRIBUTING.md.
"""

from __future__ import annotations

from typing import Any

from tasks.bfcl import BfclSuite
from tasks.builtin import BuiltinSuite
from tasks.planted import PlantedSuite
from tasks.replay import ReplaySuite
from tasks.smoke import SmokeSuite


def __getattr__(name: str) -> Any:
    # Built on first use, not at import: building it imports this package's suite modules.
    if name == "SuiteConfig":
        from optimizer.world.suite import SUITES

        return SUITES.union()
    raise AttributeError(f"module 'tasks' has no attribute {name!r}")


__all__ = ["BfclSuite", "BuiltinSuite", "PlantedSuite", "ReplaySuite", "SmokeSuite", "SuiteConfig"]
