"""One writer per directory: an exclusive `flock` on a lock file inside it.

The kernel drops a `flock` when its holder dies, even by SIGKILL, so a lock never outlives its process and a
stale one needs no guessing from pids. The file's content (pid, start time, command) only names the holder:
in the refusal a second process gets, and in a note when a killed holder's record is found and taken over.
Within one process the hold is re-entrant, so a command can claim a run directory before it starts anything
(endpoints, tracking, progress bars) and the library call that then writes there claims it again.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from optimizer.errors import AconError, ConfigError

LOCK_NAME = ".acon.lock"

Log = Callable[[str], None]

_held: dict[str, int] = {}  # directories this process holds -> nesting depth
_held_lock = threading.Lock()


class DirectoryBusy(AconError):
    """Another process holds the directory's lock: it is writing there now."""

    exit_code = 4


@dataclass(frozen=True)
class Holder:
    """Who holds (or, in a stale file, held) a directory's lock."""

    pid: int | None
    started: str | None
    command: str | None

    @classmethod
    def current(cls) -> Holder:
        program = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
        if program in ("acon", "__main__.py"):  # the console script, or `python -m optimizer`
            program = "acon"
        return cls(os.getpid(), time.strftime("%Y-%m-%d %H:%M:%S"), " ".join([program, *sys.argv[1:]]))

    @classmethod
    def parse(cls, raw: bytes) -> Holder | None:
        if not raw.strip():
            return None
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError):  # a holder killed mid-write: still worth saying something
            return cls(None, None, None)
        if not isinstance(data, dict):
            return cls(None, None, None)
        pid = data.get("pid")
        return cls(pid if isinstance(pid, int) else None, data.get("started"), data.get("command"))

    def describe(self) -> str:
        parts = [f"pid {self.pid}" if self.pid is not None else "pid unknown"]
        if self.started:
            parts.append(f"started {self.started}")
        text = ", ".join(parts)
        return f"{text}: {self.command}" if self.command else text


def _read(fd: int) -> Holder | None:
    return Holder.parse(os.pread(fd, 4096, 0))


def _acquire(directory: Path, hint: str) -> tuple[int, Holder | None]:
    """The locked descriptor of `directory`'s lock file, and the record a dead holder left in it, if any."""
    path = directory / LOCK_NAME
    while True:
        directory.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except FileNotFoundError:  # the directory was removed by a holder that had created it: make it again
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read(fd) or Holder(None, None, None)
            os.close(fd)
            message = f"{directory} is in use by another acon process ({holder.describe()}); {hint}"
            raise DirectoryBusy(message) from None
        except BaseException:
            os.close(fd)
            raise
        # A holder unlinks the file before it lets go; a lock won on an unlinked file locks nothing.
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd, _read(fd)
        os.close(fd)


@contextlib.contextmanager
def exclusive(directory: Path, *, hint: str = "wait for it to finish", log: Log | None = None) -> Iterator[None]:
    """Hold `directory` for this process; another process is refused with `DirectoryBusy` naming the holder.

    Directories this call had to create are removed again on the way out if nothing but the lock was put in
    them, so a command refused for bad input still leaves nothing behind.
    """
    key = str(directory.resolve())
    with _held_lock:
        nested = key in _held
        if nested:
            _held[key] += 1
    if nested:
        try:
            yield
        finally:
            with _held_lock:
                if key in _held:
                    _held[key] -= 1
        return
    created = [p for p in (directory, *directory.parents) if not p.exists()]
    try:
        fd, stale = _acquire(directory, hint)
    except OSError as exc:
        raise ConfigError(f"output directory {directory} is not writable ({exc.strerror})") from None
    with _held_lock:
        _held[key] = 1
    try:
        if stale is not None:
            (log or _note)(f"{directory}: took over the lock of {stale.describe()}, which ended without releasing it")
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(Holder.current().__dict__).encode(), 0)
        yield
    finally:
        with _held_lock:
            del _held[key]
        with contextlib.suppress(OSError):
            os.unlink(directory / LOCK_NAME)
            for path in created:  # innermost first; stops at the first that holds anything
                path.rmdir()
        os.close(fd)


def _note(message: str) -> None:
    print(f"acon: {message}", file=sys.stderr)
