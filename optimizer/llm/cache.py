"""A persistent cache of model replies keyed by the exact request.

Compressor calls are deterministic at temperature 0 and dominate the cost of screening, so the same
(guideline version, input) is never sent twice, across rounds and across jobs. sqlite gives atomic
writes and safe concurrent readers for free.
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
            "CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, text TEXT NOT NULL, usage TEXT NOT NULL)"
        )
        self._db.commit()

    def get(self, key: str) -> tuple[str, Usage] | None:
        with self._lock:
            row = self._db.execute("SELECT text, usage FROM replies WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return row[0], Usage.from_dict(json.loads(row[1]))

    def put(self, key: str, text: str, usage: Usage) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO replies (key, text, usage) VALUES (?, ?, ?)",
                (key, text, json.dumps(usage.to_dict())),
            )
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM replies").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()
