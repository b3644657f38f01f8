"""Extension points: each is a pydantic discriminated union built from entry points.

Strategies, suites and agents are each a union of pydantic models keyed by a `type` literal. The members
are the entry points of one group (`acon.strategies`, `acon.suites`, `acon.agents`): acon declares its
own in `pyproject.toml`, and any installed package can declare more, so a user's strategy joins every
list, config check and error message with no edit to acon (pytest and MLflow plugins work the same way).

acon's own entries are read from the source tree's `pyproject.toml` when there is one (a checkout whose
installed metadata is older than its code still finds a strategy added since), else from the installed
`acon` distribution's metadata. Every other distribution's entries are plugins.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import threading
import tomllib
from functools import reduce
from operator import or_
from pathlib import Path
from typing import Annotated, Any, Generic, TypeVar, cast

from pydantic import BaseModel, Field, TypeAdapter

from optimizer.errors import ConfigError

T = TypeVar("T", bound=BaseModel)

DISTRIBUTION = "acon"
_SOURCE_PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


class PluginError(ConfigError):
    """An entry point that cannot join its registry (fails to import, wrong base, a name already taken)."""


def own_entries(group: str, pyproject: Path = _SOURCE_PYPROJECT) -> list[tuple[str, str]]:
    """acon's own `(name, "module:attr")` entries of `group`, in declaration order."""
    if pyproject.is_file():
        project = tomllib.loads(pyproject.read_text()).get("project", {})
        if project.get("name") == DISTRIBUTION:
            return list(project.get("entry-points", {}).get(group, {}).items())
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return []
    return [(ep.name, ep.value) for ep in dist.entry_points if ep.group == group]


def plugin_entries(group: str) -> list[tuple[str, str, str]]:
    """`(name, "module:attr", distribution)` of every other installed distribution's entries in `group`."""
    found = []
    for ep in importlib.metadata.entry_points(group=group):
        dist = ep.dist.name if ep.dist is not None else "?"
        if dist != DISTRIBUTION:
            found.append((ep.name, ep.value, dist))
    return sorted(found)  # metadata order depends on sys.path; a plugin's place in every list should not


def load_reference(value: str) -> Any:
    module, _, attr = value.partition(":")
    target: Any = importlib.import_module(module.strip())
    for part in attr.strip().split(".") if attr else ():
        target = getattr(target, part)
    return target


class Registry(Generic[T]):
    """The classes of one extension point, their `type` names, and the union that validates a config.

    Built on first use and then fixed for the process (pydantic models that name the union are built once).
    """

    # `base` is abstract, so not `type[T]` (only a concrete class may be given there); `T` is the variable's.
    def __init__(self, group: str, base: type[BaseModel], *, what: str, key: str = "type") -> None:
        self.group = group
        self.base = base
        self.what = what  # "strategy", "suite", "agent": used in messages
        self.key = key
        self._classes: tuple[type[T], ...] | None = None
        self._adapter: TypeAdapter | None = None
        self._lock = threading.RLock()
        self._loading = False

    def classes(self) -> tuple[type[T], ...]:
        with self._lock:
            if self._classes is None:
                if self._loading:  # an entry's module asked for the union while being imported
                    raise PluginError(f"{self.group}: a {self.what} module uses the {self.what} registry at import")
                self._loading = True
                try:
                    self._classes = self._load()
                finally:
                    self._loading = False
            return self._classes

    def _load(self) -> tuple[type[T], ...]:
        entries = [(name, value, DISTRIBUTION) for name, value in own_entries(self.group)]
        if not entries:
            raise PluginError(f"{self.group}: acon's own {self.what} entries are missing; reinstall acon")
        by_name: dict[str, type[T]] = {}
        for name, value, dist in entries + plugin_entries(self.group):
            where = f"entry point {self.group}:{name} ({dist}: {value})"
            try:
                cls = load_reference(value)
            except Exception as exc:
                raise PluginError(f"{where} fails to load: {type(exc).__name__}: {exc}") from exc
            if not (isinstance(cls, type) and issubclass(cls, self.base)):
                raise PluginError(f"{where} is not a {self.base.__name__} subclass")
            tag = self.tag(cls)
            if tag is None:
                raise PluginError(f"{where}: {cls.__name__} has no default for its `{self.key}` literal")
            taken = by_name.get(tag)
            if taken is cls:
                continue
            if taken is not None:
                raise PluginError(f"{where}: {self.what} name {tag!r} is taken by {taken.__module__}.{taken.__name__}")
            by_name[tag] = cast("type[T]", cls)  # checked against `base` above
        return tuple(by_name.values())

    def tag(self, cls: type[BaseModel]) -> str | None:
        field = cls.model_fields.get(self.key)
        return field.default if field is not None and isinstance(field.default, str) else None

    def names(self) -> tuple[str, ...]:
        return tuple(self.tag(cls) for cls in self.classes())  # type: ignore[misc]

    def get(self, name: str) -> type[T]:
        for cls in self.classes():
            if self.tag(cls) == name:
                return cls
        raise ConfigError(f"unknown {self.what} {name!r}; known: {', '.join(self.names())}")

    def union(self) -> Any:
        """`Annotated[A | B | ..., Field(discriminator=key)]`: the type a config field declares."""
        return Annotated[reduce(or_, self.classes()), Field(discriminator=self.key)]

    def adapter(self) -> TypeAdapter:
        with self._lock:
            if self._adapter is None:
                self._adapter = TypeAdapter(self.union())
            return self._adapter
