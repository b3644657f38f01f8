"""Suites: a fixed set of tasks with a fixed train / test split, and the config that loads one."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

from optimizer.errors import ConfigError
from optimizer.world.task import Task

Split = Literal["train", "test", "all"]


@dataclass(frozen=True)
class Suite:
    """Tasks plus the ids in each split. The split is part of the suite, never chosen per run."""

    name: str
    tasks: tuple[Task, ...]
    train_ids: frozenset[str]
    test_ids: frozenset[str]

    def __post_init__(self) -> None:
        ids = [task.id for task in self.tasks]
        if len(set(ids)) != len(ids):
            raise ConfigError(f"suite {self.name!r}: duplicate task ids")
        unknown = (self.train_ids | self.test_ids) - set(ids)
        if unknown:
            raise ConfigError(f"suite {self.name!r}: split names unknown task ids {sorted(unknown)[:3]}")
        if self.train_ids & self.test_ids:
            raise ConfigError(f"suite {self.name!r}: train and test splits overlap")

    def split(self, name: Split) -> list[Task]:
        if name == "all":
            return list(self.tasks)
        keep = self.train_ids if name == "train" else self.test_ids
        return [task for task in self.tasks if task.id in keep]

    def task(self, task_id: str) -> Task:
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

    @abstractmethod
    def load(self) -> Suite:
        """Build or read the suite. Raises `ConfigError` with a one-line reason when it cannot."""

    def fingerprint(self) -> str:
        return self.model_dump_json()


_NAMED: dict[str, Callable[[], SuiteSource]] = {}


def register_suite(name: str, source: Callable[[], SuiteSource]) -> None:
    """Give a suite a short name for `acon suites list|show`."""
    _NAMED[name] = source


def available_suites() -> dict[str, Callable[[], SuiteSource]]:
    import tasks  # noqa: F401 - importing the package registers its named suites

    return dict(_NAMED)


def load_suite(name: str) -> Suite:
    suites = available_suites()
    if name not in suites:
        raise ConfigError(f"unknown suite {name!r}; known: {', '.join(sorted(suites))}")
    return suites[name]().load()
