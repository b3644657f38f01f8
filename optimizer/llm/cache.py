"""A persistent cache of model replies keyed by the exact request.

Compressor calls are deterministic at temperature 0 and dominate the cost of screening, so the same
(guideline version, input) is never sent twice, across rounds and across jobs. sqlite gives atomic
writes and safe concurrent readers for free.

Each reply also keeps its `origin`: which attempt of which episode fetched it (see
`Compressor.attempt`), so an episode redone after a crash can tell its own earlier calls from cache hits.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
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
        self._lock = threading.Lock()
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
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO replies (key, text, usage, origin) VALUES (?, ?, ?, ?)",
                (key, text, json.dumps(usage.to_dict()), origin),
            )
            self._db.commit()

    def claim(self, key: str, origin: str) -> None:
        """Make `origin` the owner of a cached reply."""
        with self._lock:
            self._db.execute("UPDATE replies SET origin = ? WHERE key = ?", (origin, key))
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM replies").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()
