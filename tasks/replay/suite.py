"""`replay` suites: stored tasks (imported runs or an exported suite) loaded from Parquet.

`acon suites import FILE.jsonl --name NAME` writes `suites/NAME.parquet` (`--out` changes the folder).
A config loads it by name or by path:

```toml
[suite]
type = "replay"
name = "NAME"                  # suites/NAME.parquet, relative to the working directory
# path = "elsewhere/NAME.parquet"   # or a file written by `acon suites import` / `acon suites export`
# path = "runs.jsonl"               # or a trajectory file, converted in memory on every load
```

Every `suites/NAME.parquet` under the working directory is known by NAME to `acon suites list|show`
(`ReplaySuite.named`), as is a suite imported elsewhere in this process.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import ConfigDict, model_validator

from optimizer.errors import ConfigError
from optimizer.world.suite import Suite, SuiteSource, available_suites
from tasks.replay.env import replay_task
from tasks.replay.store import UNSPLIT, StoredTask, read_parquet, write_parquet
from tasks.replay.trajectories import read_trajectories

DEFAULT_DIR = Path("suites")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
# Suites imported by this process into a folder other than `suites/` (`--out`), by name.
_IMPORTED: dict[str, Callable[[], SuiteSource]] = {}


class ReplaySuite(SuiteSource):
    """Tasks replayed from a recording: recorded calls are the reference, recorded outputs the world."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    type: Literal["replay"] = "replay"
    name: str | None = None
    """An imported suite in `suites/` (the default `--out` of `acon suites import`)."""
    path: str | None = None
    """A `.parquet` file written by `acon suites import` or `export`, or a trajectory `.jsonl` file."""
    seed: int = 0
    """Seed of the 50/50 split when `path` is a `.jsonl` file (a Parquet file stores its split)."""

    stored_names: ClassVar[bool] = True

    @classmethod
    def named(cls) -> dict[str, Callable[[], SuiteSource]]:
        """Every `NAME.parquet` in `suites/`, and the suites this process imported elsewhere."""
        found: dict[str, Callable[[], SuiteSource]] = dict(_IMPORTED)
        if DEFAULT_DIR.is_dir():
            for file in sorted(DEFAULT_DIR.glob("*.parquet")):
                if _NAME.fullmatch(file.stem):
                    found[file.stem] = functools.partial(ReplaySuite, name=file.stem)
        return found

    @model_validator(mode="after")
    def _one_source(self) -> ReplaySuite:
        if (self.name is None) == (self.path is None):
            raise ValueError("give exactly one of 'name' (a suite in suites/) or 'path' (.parquet, .jsonl)")
        return self

    @property
    def file(self) -> Path:
        return Path(self.path) if self.path is not None else DEFAULT_DIR / f"{self.name}.parquet"

    def load(self) -> Suite:
        file = self.file
        if file.suffix == ".jsonl":
            stored = read_trajectories(file, file.stem, seed=self.seed)
        else:
            if self.name is not None and not file.exists():
                raise ConfigError(
                    f"no imported suite {self.name!r} ({file} does not exist); "
                    f"create it with `acon suites import FILE.jsonl --name {self.name}`"
                )
            stored = read_parquet(file)
        return suite_of(stored, str(file))

    def fingerprint(self) -> str:
        # Episodes are cached by this key: a re-imported file with other content must not reuse them.
        try:
            digest = hashlib.sha256(self.file.read_bytes()).hexdigest()[:16]
        except OSError:
            digest = "missing"
        return f"{self.model_dump_json()}:{digest}"


def suite_of(stored: list[StoredTask], where: str) -> Suite:
    names = {t.suite for t in stored}
    if len(names) != 1:
        raise ConfigError(f"{where}: rows of several suites ({', '.join(sorted(names))}); one suite per file")
    tasks = tuple(replay_task(t) for t in stored)
    train = frozenset(t.id for t in stored if t.split == "train")
    test = frozenset(t.id for t in stored if t.split == "test")
    odd = sorted({t.split for t in stored} - {"train", "test", UNSPLIT})
    if odd:
        raise ConfigError(f"{where}: unknown split {odd[0]!r} (train, test or {UNSPLIT})")
    return Suite(names.pop(), tasks, train, test)


def import_trajectories(
    source: Path, name: str, *, out: Path = DEFAULT_DIR, seed: int = 0, force: bool = False
) -> tuple[Path, Suite]:
    """Convert a trajectory file into `out/NAME.parquet` and register it; nothing is written on error."""
    check_name(name)
    target = out / f"{name}.parquet"
    if target.exists() and not force:
        raise ConfigError(f"{target} already exists; pass --force to replace it")
    return store_imported(read_trajectories(source, name, seed=seed), name, str(source), out=out)


def import_mlflow_traces(
    tracking_uri: str,
    experiment: str,
    name: str,
    *,
    filter_string: str | None = None,
    retention: dict | None = None,
    out: Path = DEFAULT_DIR,
    seed: int = 0,
    force: bool = False,
) -> tuple[Path, Suite]:
    """`import_trajectories` for the runs traced in an MLflow experiment (`tasks.replay.mlflow_traces`)."""
    from tasks.replay.mlflow_traces import read_mlflow_runs

    check_name(name)
    target = out / f"{name}.parquet"
    if target.exists() and not force:
        raise ConfigError(f"{target} already exists; pass --force to replace it")
    stored = read_mlflow_runs(
        tracking_uri, experiment, name, filter_string=filter_string, retention=retention, seed=seed
    )
    return store_imported(stored, name, f"mlflow:{experiment}", out=out)


def store_imported(stored: list, name: str, where: str, *, out: Path) -> tuple[Path, Suite]:
    target = out / f"{name}.parquet"
    suite = suite_of(stored, where)  # validates ids and splits before anything is written
    write_parquet(stored, target)
    if out.resolve() != DEFAULT_DIR.resolve():
        _IMPORTED[name] = functools.partial(ReplaySuite, path=str(target))
    return target, suite


def check_name(name: str) -> None:
    if not _NAME.fullmatch(name):
        raise ConfigError(f"suite name {name!r}: use letters, digits, '_', '.', '-' (first letter or digit)")
    taken = available_suites().get(name)
    if taken is not None and not _is_replay(taken):
        raise ConfigError(f"suite name {name!r} is taken by a built-in suite; choose another")


def _is_replay(source) -> bool:
    return isinstance(source, functools.partial) and source.func is ReplaySuite
