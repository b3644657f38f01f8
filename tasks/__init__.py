"""Task suites. Each suite module defines one `SuiteSource` subclass; `SuiteConfig` is their union.

Adding a suite: one module with a `SuiteSource` subclass (a `type` literal and its parameters), one
entry in the union below, and optionally `register_suite(name, ...)` for `acon suites list`.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from tasks.bfcl import BfclSuite
from tasks.builtin import BuiltinSuite
from tasks.planted import PlantedSuite
from tasks.replay import ReplaySuite
from tasks.smoke import SmokeSuite

SuiteConfig = Annotated[SmokeSuite | BuiltinSuite | BfclSuite | ReplaySuite | PlantedSuite, Field(discriminator="type")]
