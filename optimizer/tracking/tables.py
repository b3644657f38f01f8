"""Rows (list of dicts) → the column mapping `mlflow.log_table` takes; nested values become JSON text."""

from __future__ import annotations

import json
from collections.abc import Sequence

from optimizer.jsontypes import JSON, JSONRecord


def to_columns(rows: Sequence[JSONRecord]) -> dict[str, list[JSON]]:
    """Columns in first-seen order; a row without a key gets None there."""
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(row))
    return {name: [_cell(row.get(name)) for row in rows] for name in names}


def _cell(value: JSON) -> JSON:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)
