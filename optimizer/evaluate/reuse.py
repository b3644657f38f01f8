"""Episodes of the same run recorded under another task list, found and borrowed.

A run's key holds its task list, so a benchmark widened from 6 tasks to 10 plans a new directory; without this,
every episode of the first 6 ran again (55 s each with the 1.5B agent here). A sibling directory is the same run
when its key, recomputed over its own task list with every other input of this run, is the key it was stored
under: then nothing but the task list differs, and an episode of a task depends on that task alone. Runs stored
before this existed qualify the same way, since nothing new is read from their meta beyond the task list.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from optimizer.evaluate.store import EpisodeStore, read_meta

KeyFor = Callable[[Sequence[str]], str]  # a task list -> the key this run would have over it


def same_run_elsewhere(directory: Path, key_for: KeyFor) -> tuple[Path, ...]:
    """Directories beside `directory` holding this run over other task lists, newest first."""
    if not directory.parent.is_dir():
        return ()
    found = []
    for other in directory.parent.glob(f"{directory.name.rpartition('-')[0]}-*"):
        if other == directory or not other.is_dir():
            continue
        key = other.name.rpartition("-")[2]
        meta = read_meta(other) or {}
        tasks = meta.get("tasks")
        if meta.get("key") == key and _task_list(tasks) and key_for(tasks) == key:  # type: ignore[arg-type]
            found.append(other)
    return tuple(sorted(found, key=_mtime, reverse=True))


def borrow(store: EpisodeStore, wanted: Iterable[str], sources: Sequence[Path], strategy_version: str) -> list[str]:
    """Copy into `store` the newest final record of each wanted task that a source holds; the tasks copied.

    An infrastructure error is not an outcome, and a record of another strategy version cannot be this run's,
    whatever its directory says: neither is copied.
    """
    missing = list(dict.fromkeys(wanted))
    copied: list[str] = []
    for source in sources:
        if not missing:
            break
        newest = {r["task_id"]: r for r in EpisodeStore(source).latest()}
        for task_id in list(missing):
            record = newest.get(task_id)
            if record is None or record.get("outcome") == "infra_error":
                continue
            if record.get("strategy_version") != strategy_version:
                continue
            store.log.append(record)
            copied.append(task_id)
            missing.remove(task_id)
    return copied


def _task_list(tasks: object) -> bool:
    return isinstance(tasks, list) and bool(tasks) and all(isinstance(t, str) for t in tasks)


def _mtime(path: Path) -> float:
    try:
        return (path / "episodes.jsonl").stat().st_mtime
    except FileNotFoundError:
        return 0.0
