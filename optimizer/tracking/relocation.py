"""A store copied or moved elsewhere: its artifact paths rewritten into the copy, in a snapshot of it.

MLflow records every artifact location as an absolute path when it is written (an experiment's root, each
run's, trace's and logged model's directory under it) and has no way to change one afterwards (mlflow#3144,
mlflow#3719): a copy reads its artifacts from the original, or from nowhere once the original is gone. The
copy itself is not rewritten: reviewing a job should not change it, and it may be read-only, or the backup
that has to stay as it was. A snapshot of it, taken with sqlite's backup API, is rewritten instead.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import url2pathname

from mlflow.utils.mlflow_tags import MLFLOW_ARTIFACT_LOCATION

# Every column of MLflow 3's schema that holds an artifact location (inspected from a store acon wrote).
ARTIFACT_COLUMNS = (
    ("experiments", "artifact_location"),
    ("runs", "artifact_uri"),
    ("logged_models", "artifact_location"),
    ("model_versions", "source"),
    ("model_versions", "storage_location"),
    ("workspaces", "default_artifact_root"),
)


def moved_roots(database: Path, artifacts: Path) -> dict[str, str]:
    """Each experiment root recorded outside `artifacts` whose layout is found under `artifacts`: old → new.

    Found means some run, trace or model recorded under the old root has its directory at the same relative
    path in `artifacts`; a store copied without its artifacts has nothing to read there and keeps its paths.
    """
    here = artifacts.resolve()
    with contextlib.closing(_read_only(database)) as db:
        roots = [row[0] for row in db.execute("SELECT DISTINCT artifact_location FROM experiments")]
        locations = list(_locations(db))
    moved = {}
    for root in roots:
        old = _local_path(root or "")
        if old is None or old.resolve().is_relative_to(here):
            continue
        if any(_found_under(location, root, here) for location in locations):
            moved[root] = here.as_uri() if root.startswith("file:") else str(here)
    return moved


def relocated_snapshot(database: Path, moved: Mapping[str, str], snapshot: Path) -> Path:
    """A copy of `database` at `snapshot` whose artifact locations under each old root point under the new."""
    with contextlib.closing(_read_only(database)) as source, contextlib.closing(sqlite3.connect(snapshot)) as copy:
        source.backup(copy)
        with copy:  # one transaction: the snapshot is rewritten whole or not at all
            for table, column in _present(copy, ARTIFACT_COLUMNS):
                for old, new in moved.items():
                    _rewrite(copy, table, column, old, new)
            for old, new in moved.items():
                _rewrite(copy, "trace_tags", "value", old, new, f"key = '{MLFLOW_ARTIFACT_LOCATION}'")
    return snapshot


def _read_only(database: Path) -> sqlite3.Connection:
    # Read-only by construction: nothing done here can write to the store being reviewed.
    return sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)


def _present(db: sqlite3.Connection, columns: tuple[tuple[str, str], ...]) -> list[tuple[str, str]]:
    """The columns this store's schema has (an older MLflow's store lacks the newer tables)."""
    return [
        (table, column)
        for table, column in columns
        if any(row[1] == column for row in db.execute(f'PRAGMA table_info("{table}")'))
    ]


def _locations(db: sqlite3.Connection) -> Iterator[str]:
    for table, column in _present(db, ARTIFACT_COLUMNS):
        yield from (row[0] for row in db.execute(f'SELECT "{column}" FROM "{table}" WHERE "{column}" IS NOT NULL'))
    if _present(db, (("trace_tags", "value"),)):
        query = "SELECT value FROM trace_tags WHERE key = ?"
        yield from (row[0] for row in db.execute(query, (MLFLOW_ARTIFACT_LOCATION,)))


def _rewrite(db: sqlite3.Connection, table: str, column: str, old: str, new: str, where: str = "1") -> None:
    # A prefix compared as text, not LIKE: a path's own '_' and '%' would be wildcards there.
    db.execute(
        f'UPDATE "{table}" SET "{column}" = ? || substr("{column}", ?) '
        f'WHERE {where} AND ("{column}" = ? OR substr("{column}", 1, ?) = ?)',
        (new, len(old) + 1, old, len(old) + 1, f"{old}/"),
    )


def _found_under(location: str, root: str, artifacts: Path) -> bool:
    if not location.startswith(f"{root}/"):
        return False
    relative = location[len(root) + 1 :]
    if root.startswith("file:"):
        relative = url2pathname(relative)
    return bool(relative) and (artifacts / relative).exists()


def _local_path(location: str) -> Path | None:
    """The directory a recorded location names on this machine (None: a remote or relative one)."""
    parts = urlsplit(location)
    if parts.scheme == "file" and parts.netloc in ("", "localhost"):
        return Path(url2pathname(parts.path))
    if not parts.scheme and location.startswith("/"):
        return Path(location)
    return None
