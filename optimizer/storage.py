"""Crash-safe file writes: a reader sees the old file or the new one, never half of either."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from optimizer.errors import AconError, ConfigError


def atomic_write_text(path: Path, text: str) -> None:
    """Write `text` to `path` at once: a new file, or a regular file replaced (a symlink is followed to it).

    Anything else already at the path is refused: `os.replace` would put a regular file in its place (run as
    root, `--out /dev/full` turned the device into one; a directory would fail halfway through instead).
    """
    target = writable_file(path)
    tmp: str | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=target.parent, prefix=f".{target.name}.", delete=False) as file:
            tmp = file.name
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise AconError(f"cannot write {path}: {exc.strerror or exc}") from None


def writable_file(path: Path, what: str = "") -> Path:
    """The file to write for `path` (a symlink's target), or a one-line `ConfigError` when something other
    than a regular file is there. `what` names where the path came from (a flag), for the message."""
    path = Path(path)
    target = path.resolve() if path.is_symlink() else path
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        return target
    except OSError as exc:
        raise ConfigError(f"cannot write {what}{' ' if what else ''}{path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        raise ConfigError(
            f"{what}{' ' if what else ''}{path} is {_kind(mode)}, not a regular file: give the path of a file to write"
        )
    return target


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a named pipe"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def atomic_write_json(path: Path, data: Any) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


class JsonlLog:
    """Append-only JSON Lines file. A torn last line (a crash mid-write) is detected and dropped.

    A line that is not valid JSON elsewhere (a file damaged outside acon) is never parsed into a record:
    `read()` skips it and counts it in `skipped`, so whatever it held is redone rather than half-read.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self.skipped = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        self._repair()

    def _repair(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        if not data or data.endswith(b"\n"):
            return
        cut = data.rfind(b"\n") + 1
        with self.path.open("r+b") as handle:
            handle.truncate(cut)

    def append(self, record: dict[str, Any]) -> int:
        """Write one record; returns its byte offset, so a reader can seek straight to it (`read_at`)."""
        line = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode()
        with self._lock:
            offset = 0
            try:
                with self.path.open("ab") as handle:
                    offset = handle.seek(0, os.SEEK_END)
                    handle.write(line)
                    handle.flush()
                    os.fsync(handle.fileno())
            except OSError as exc:
                # A full disk stores part of the line: taken back, so the log never holds a torn record.
                with contextlib.suppress(OSError), self.path.open("r+b") as handle:
                    handle.truncate(offset)
                raise AconError(f"cannot write {self.path}: {exc.strerror or exc}") from None
        return offset

    def read(self) -> list[dict[str, Any]]:
        return [record for _, record in self.scan()]

    def scan(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """Every record with its byte offset, one line in memory at a time."""
        self.skipped = 0
        if not self.path.exists():
            return
        with self.path.open("rb") as handle:
            offset = 0
            for line in handle:
                start, offset = offset, offset + len(line)
                if not line.strip():
                    continue
                record = _parse(line)
                if record is None:
                    self.skipped += 1
                else:
                    yield start, record

    def read_at(self, offset: int) -> dict[str, Any]:
        """The record that starts at `offset` (from `append` or `scan`)."""
        with self.path.open("rb") as handle:
            handle.seek(offset)
            record = _parse(handle.readline())
        if record is None:
            raise ValueError(f"{self.path}: no record at byte {offset}")
        return record


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(line.decode("utf-8", errors="replace"))
    except json.JSONDecodeError:
        return None
    return record if isinstance(record, dict) else None
