"""A persistent cache of model replies keyed by the exact request.

Compressor calls are deterministic at temperature 0 and dominate the cost of screening, so the same
(guideline version, input) is never sent twice, across rounds and across jobs. sqlite gives atomic
writes and safe concurrent readers for free.

Each reply also keeps its `origin`: which attempt of which episode fetched it (see
`Compressor.attempt`), so an episode redone after a crash can tell its own earlier calls from cache hits.

The cache only saves repeat calls: a reply it cannot store is still a good reply. So a full disk during
a write rolls that write back (sqlite leaves the file as it was), says so in one line on stderr, and the
cache stops writing for the rest of the process while replies are used uncached; what stops a job on a
full disk is its own episode store, which must not lose work, not this cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from optimizer.llm.usage import Usage


def request_key(request: Mapping[str, Any], *, endpoint: str) -> str:
    payload = json.dumps({"endpoint": endpoint, "request": request}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


class ResponseCache:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self.writable = True  # False once a write found the disk full: replies are then used uncached
        self._db = sqlite3.connect(path, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, text TEXT NOT NULL, usage TEXT NOT NULL, "
            "origin TEXT)"
        )
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(replies)")}
        if "origin" not in columns:  # a cache written before origins were kept
            self._db.execute("ALTER TABLE replies ADD COLUMN origin TEXT")
        self._db.commit()

    def get(self, key: str) -> tuple[str, Usage, str | None] | None:
        """`(text, usage, origin)` of the cached reply, or None."""
        with self._lock:
            row = self._db.execute("SELECT text, usage, origin FROM replies WHERE key = ?", (key,)).fetchone()
        # Versions before empty replies were refused stored them; served, they would fail every later run.
        if row is None or not row[0].strip():
            return None
        return row[0], Usage.from_dict(json.loads(row[1])), row[2]

    def put(self, key: str, text: str, usage: Usage, origin: str | None = None) -> None:
        if not text.strip():
            raise ValueError("an empty reply is an endpoint error, never cached")
        self._write(
            "INSERT OR REPLACE INTO replies (key, text, usage, origin) VALUES (?, ?, ?, ?)",
            (key, text, json.dumps(usage.to_dict()), origin),
        )

    def claim(self, key: str, origin: str) -> None:
        """Make `origin` the owner of a cached reply."""
        self._write("UPDATE replies SET origin = ? WHERE key = ?", (origin, key))

    def _write(self, statement: str, parameters: tuple[Any, ...]) -> None:
        with self._lock:
            if not self.writable:
                return
            try:
                self._db.execute(statement, parameters)
                self._db.commit()
            except sqlite3.OperationalError as exc:
                if not _disk_full(exc):
                    raise
                with contextlib.suppress(sqlite3.Error):  # nothing was committed: the file is as it was
                    self._db.rollback()
                self.writable = False
                print(
                    f"acon: reply cache {self.path}: disk full ({exc}); replies are used but no longer cached",
                    file=sys.stderr,
                )

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM replies").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _disk_full(exc: sqlite3.OperationalError) -> bool:
    return getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or "disk is full" in str(exc)
