"""A guideline file named on the command line instead of a job directory (`acon export`, `acon compare
--strategies`): Markdown with front matter, or the JSON of `acon export --format json`."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from optimizer.context.guideline import Guideline
from optimizer.errors import ConfigError

EXPECTS = "a job directory of `acon optimize`, or a guideline file (.md, or .json from `acon export --format json`)"


def guideline_file(path: Path) -> Guideline:
    """A guideline file given instead of a job directory: Markdown with front matter, or its JSON form."""
    if path.suffix not in (".md", ".json"):
        raise ConfigError(f"{path} is a file but not a guideline (.md or .json); export expects {EXPECTS}")
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text; export expects {EXPECTS}") from None
    if path.suffix == ".md":
        return Guideline.from_markdown(text, source=str(path))
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: invalid JSON (line {exc.lineno}): {exc.msg}") from None
    if not isinstance(data, dict) or not {"history", "observation"} <= data.keys():
        raise ConfigError(
            f"{path}: not a guideline (expected the JSON of `acon export --format json`: "
            "name, policy, history, observation)"
        )
    data.pop("version", None)  # derived from the content, never trusted from the file
    try:
        return Guideline.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"]) or "guideline"
        raise ConfigError(f"{path}: not a valid guideline: {where}: {error['msg']}") from None
