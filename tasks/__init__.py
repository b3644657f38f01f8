"""Task suites. Each suite module defines one `SuiteSource` subclass; `SuiteConfig` is their union.

Adding a suite: one module with a `SuiteSource` subclass (a `type` literal and its parameters), one
line in `_SOURCES`, and optionally `register_suite(name, ...)` for `acon suites list`.
"""

from __future__ import annotations

from typing import Annotated, Union

from pydantic import Field

from optimizer.world.suite import SuiteSource

_SOURCES: list[type[SuiteSource]] = []


def _collect() -> None:
    from tasks.smoke import SmokeSuite

    _SOURCES.extend([SmokeSuite])
    try:
        from tasks.builtin import BuiltinSuite
    except ImportError:  # pragma: no cover - only while the builtin suite is being written
        pass
    else:
        _SOURCES.append(BuiltinSuite)
    try:
        from tasks.bfcl import BfclSuite
    except ImportError:  # pragma: no cover
        pass
    else:
        _SOURCES.append(BfclSuite)
    try:
        from tasks.replay import ReplaySuite
    except ImportError:  # pragma: no cover
        pass
    else:
        _SOURCES.append(ReplaySuite)


_collect()

SuiteConfig = Annotated[Union[tuple(_SOURCES)], Field(discriminator="type")]  # noqa: UP007
