"""What `acon compare --strategies` accepts: a strategy name, a guideline file, or a registered `NAME@ALIAS`.

A learned guideline is compared where it was learned or on the user's own suite without a TOML per
guideline: a path (`guidelines/learned/x.md`, or the `.json` of `acon export --format json`) runs it as
the `guideline` strategy, and `NAME@ALIAS` (or `NAME/VERSION`) reads it from a prompt registry: the
config's tracking store (where `acon optimize` with that config registered it), or `registry` (a job
directory or a tracking URI) for a guideline learned elsewhere.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from optimizer.errors import ConfigError

if TYPE_CHECKING:
    from optimizer.config import ExperimentConfig
    from optimizer.context.guideline import Guideline
    from optimizer.context.strategies.base import ContextStrategy


def strategy_from_spec(config: ExperimentConfig, spec: str, registry: str | None = None) -> ContextStrategy:
    """The strategy `spec` names, its guideline read now (the version run is the one read here)."""
    from optimizer.context.strategies.guideline import GuidelineStrategy
    from optimizer.evaluate.strategy_runs import strategy_named

    registered = "@" in spec or re.fullmatch(r"[^/]+/\d+", spec)
    if spec.endswith((".md", ".json")) or ("/" in spec and not registered):
        from optimizer.cli.guideline_files import guideline_file

        if not Path(spec).is_file():
            raise ConfigError(f"--strategies: guideline file not found: {spec}")
        return GuidelineStrategy(guideline=guideline_file(Path(spec)))
    if registered:
        return GuidelineStrategy(guideline=_registered(config, spec, registry))
    return strategy_named(config, spec).fixed()


def _registered(config: ExperimentConfig, ref: str, registry: str | None) -> Guideline:
    from optimizer.tracking import load_from_registry, resolve_store, resolve_uri

    if registry is not None:
        uri = resolve_uri(Path(registry)) if Path(registry).is_dir() else registry
    elif config.tracking.enabled:
        uri = resolve_store(config.tracking, config.out_dir).uri
    else:
        raise ConfigError(f"--strategies {ref}: the config's tracking is disabled; name the store with --registry")
    return load_from_registry(ref, uri)
