"""Suites: a fixed set of tasks with a fixed train / test split, and the config that loads one."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal, overload

from pydantic import BaseModel, ConfigDict

from optimizer.errors import ConfigError
from optimizer.registry import Registry
from optimizer.world.task import Task

Split = Literal["train", "test", "all"]


class TaskList(Sequence[Task]):
    """Tasks built from their ids on access and never kept: a procedural suite of ten thousand tasks costs
    its ids in memory, not ten thousand worlds (a built task holds its reference, texts and a seeded RNG).

    Building is deterministic, so a task built twice is equal to itself; slices and subsets stay lazy.
    """

    def __init__(self, ids: Sequence[str], build: Callable[[str], Task]) -> None:
        self.ids = tuple(ids)
        self._build = build

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, index: int) -> Task: ...

    @overload
    def __getitem__(self, index: slice) -> TaskList: ...

    def __getitem__(self, index: int | slice) -> Task | TaskList:
        if isinstance(index, slice):
            return TaskList(self.ids[index], self._build)
        return self._build(self.ids[index])

    def __iter__(self) -> Iterator[Task]:
        for task_id in self.ids:
            yield self._build(task_id)

    def only(self, keep: Callable[[str], bool]) -> TaskList:
        return TaskList([i for i in self.ids if keep(i)], self._build)


def task_ids(tasks: Sequence[Task]) -> list[str]:
    """The ids of `tasks`, without building a lazy list's tasks."""
    return list(tasks.ids) if isinstance(tasks, TaskList) else [t.id for t in tasks]


def only(tasks: Sequence[Task], keep: Callable[[str], bool]) -> Sequence[Task]:
    """The tasks whose id `keep` accepts, lazily for a `TaskList`."""
    return tasks.only(keep) if isinstance(tasks, TaskList) else [t for t in tasks if keep(t.id)]


@dataclass(frozen=True)
class Suite:
    """Tasks plus the ids in each split. The split is part of the suite, never chosen per run."""

    name: str
    tasks: Sequence[Task]  # a tuple, or a `TaskList` built on access
    train_ids: frozenset[str]
    test_ids: frozenset[str]

    def __post_init__(self) -> None:
        ids = task_ids(self.tasks)
        if len(set(ids)) != len(ids):
            raise ConfigError(f"suite {self.name!r}: duplicate task ids")
        unknown = (self.train_ids | self.test_ids) - set(ids)
        if unknown:
            raise ConfigError(f"suite {self.name!r}: split names unknown task ids {sorted(unknown)[:3]}")
        if self.train_ids & self.test_ids:
            raise ConfigError(f"suite {self.name!r}: train and test splits overlap")

    def split(self, name: Split) -> Sequence[Task]:
        if name == "all":
            return self.tasks if isinstance(self.tasks, TaskList) else list(self.tasks)
        keep = self.train_ids if name == "train" else self.test_ids
        return only(self.tasks, keep.__contains__)

    def task(self, task_id: str) -> Task:
        if isinstance(self.tasks, TaskList):
            if task_id in self.tasks.ids:
                return self.tasks.only(task_id.__eq__)[0]
            raise ConfigError(f"suite {self.name!r} has no task {task_id!r}")
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise ConfigError(f"suite {self.name!r} has no task {task_id!r}")


def split_by_seed(ids: Sequence[str], seed: int, train_fraction: float = 0.5) -> tuple[frozenset, frozenset]:
    """Deterministic split: sort by a seeded hash so adding tasks never reshuffles existing ones."""
    import hashlib

    def key(task_id: str) -> str:
        return hashlib.sha256(f"{seed}:{task_id}".encode()).hexdigest()

    ordered = sorted(ids, key=key)
    cut = round(len(ordered) * train_fraction)
    return frozenset(ordered[:cut]), frozenset(ordered[cut:])


class SuiteSource(BaseModel, ABC):
    """Base of every suite's config: `type` selects the suite, the other fields are its parameters."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str

    # Names read from stored data (replay files), never shadowing a name a suite kind declares in code.
    stored_names: ClassVar[bool] = False

    @abstractmethod
    def load(self) -> Suite:
        """Build or read the suite. Raises `ConfigError` with a one-line reason when it cannot."""

    def fingerprint(self) -> str:
        return self.model_dump_json()

    @classmethod
    def named(cls) -> Mapping[str, Callable[[], SuiteSource]]:
        """The short names this kind of suite is known by in `acon suites list|show`.

        By default the `type` itself, when every other field has a default; a suite with variants (BFCL's
        categories, replay files) lists each.
        """
        required = [n for n, f in cls.model_fields.items() if n != "type" and f.is_required()]
        return {} if required else {cls.model_fields["type"].default: cls}


SUITES: Registry[SuiteSource] = Registry("acon.suites", SuiteSource, what="suite")


def available_suites() -> dict[str, Callable[[], SuiteSource]]:
    """Every suite name, from the registered suite kinds in order: the first kind to claim a name keeps it,
    and names in code come before names of stored files."""
    names: dict[str, Callable[[], SuiteSource]] = {}
    for cls in sorted(SUITES.classes(), key=lambda cls: cls.stored_names):
        for name, source in cls.named().items():
            names.setdefault(name, source)
    return names


def load_suite(name: str) -> Suite:
    suites = available_suites()
    if name not in suites:
        raise ConfigError(f"unknown suite {name!r}; known: {', '.join(sorted(suites))}")
    return suites[name]().load()
