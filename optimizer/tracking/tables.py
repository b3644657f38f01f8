"""Rows (list of dicts) → the column mapping `mlflow.log_table` takes; nested values become JSON text."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any


def to_columns(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """Columns in first-seen order; a row without a key gets None there."""
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(row))
    return {name: [_cell(row.get(name)) for row in rows] for name in names}


def _cell(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)
