"""A full disk during a reply-cache write: the reply is used uncached, nothing stored is lost, one line says so.

The cache only saves repeat calls, so a write it cannot make is skipped, not fatal: sqlite rolls the write
back, the cache stops writing for the process, and the replies stored before stay served.
"""

from __future__ import annotations

import sqlite3

import pytest

from optimizer.context.compressor import Compressor
from optimizer.llm import ChatClient, EndpointConfig
from optimizer.llm.cache import ResponseCache
from optimizer.llm.usage import Usage

USAGE = Usage(10, 5, 0, "reported")


def fill(cache: ResponseCache) -> None:
    # sqlite's own limit on the file's pages: the next write that needs a page fails with SQLITE_FULL,
    # "database or disk is full", exactly as on a full disk.
    pages = cache._db.execute("PRAGMA page_count").fetchone()[0]
    cache._db.execute(f"PRAGMA max_page_count = {pages}")


class _Full:
    """A connection whose writes fail as a full disk makes them fail (the message sqlite gives)."""

    def __init__(self, db: sqlite3.Connection, message: str = "database or disk is full") -> None:
        self._db, self._message = db, message

    def execute(self, statement: str, *args):
        if statement.lstrip().upper().startswith(("INSERT", "UPDATE")):
            raise sqlite3.OperationalError(self._message)
        return self._db.execute(statement, *args)

    def __getattr__(self, name: str):
        return getattr(self._db, name)


def test_a_full_disk_leaves_the_stored_replies_and_says_so_in_one_line(tmp_path, capsys):
    path = tmp_path / "replies.sqlite"
    cache = ResponseCache(path)
    cache.put("stored", "ORD-1 shipped", USAGE, "episode-1#a")
    fill(cache)
    cache.put("new", "x" * 200_000, USAGE, "episode-2#b")  # needs pages the file may not grow by
    cache.put("newer", "y" * 200_000, USAGE)  # no second attempt, no second line
    cache.claim("stored", "episode-3#c")
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "disk full" in lines[0] and "no longer cached" in lines[0], lines
    assert not cache.writable
    assert cache.get("new") is None and cache.get("stored")[0] == "ORD-1 shipped" and len(cache) == 1
    cache.close()
    reopened = ResponseCache(path)
    assert reopened.get("stored") == ("ORD-1 shipped", USAGE, "episode-1#a")
    assert reopened._db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_compression_on_a_full_disk_is_used_uncached(stub, tmp_path, capsys):
    cache = ResponseCache(tmp_path / "replies.sqlite")
    cache._db = _Full(cache._db)
    server = stub(lambda request: "ORD-1 shipped")
    config = EndpointConfig(base_url=server.base_url, model="stub", backoff_s=0.0, max_retries=0)
    compressor = Compressor(ChatClient(config, base_url=server.base_url, model="stub"), cache)
    for _ in range(2):
        output = compressor.compress_observation(
            guideline="Keep ids.", task="Find the order.", tool="search", observation="order ORD-1", max_tokens=64
        )
        assert output.text == "ORD-1 shipped" and not output.cached
    assert compressor.calls == 2 and len(server.requests) == 2  # not cached, so asked again: nothing else lost
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_other_database_errors_still_raise(tmp_path):
    cache = ResponseCache(tmp_path / "replies.sqlite")
    cache._db = _Full(cache._db, "database is locked")
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        cache.put("k", "text", USAGE)
    assert cache.writable
