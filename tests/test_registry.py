"""`optimizer.registry`: every extension point's union comes from entry points, acon's own first."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from typing import Literal, get_args

import pytest

from optimizer import registry
from optimizer.agent.kinds import AGENTS
from optimizer.context.strategies import STRATEGIES, STRATEGY_NAMES, ContextStrategy, Fifo
from optimizer.errors import ConfigError
from optimizer.registry import PluginError, Registry
from optimizer.search.proposers import PROPOSERS
from optimizer.search.searches import SEARCHES
from optimizer.world.suite import SUITES
from tests.conftest import ROOT


class Extra(ContextStrategy):
    """A strategy no acon module declares."""

    type: Literal["extra"] = "extra"


class FifoAgain(ContextStrategy):
    type: Literal["fifo"] = "fifo"


class Untyped(ContextStrategy):
    pass


def fresh(monkeypatch, *plugins: tuple[str, str]) -> Registry:
    """A strategy registry over acon's own entries plus `plugins` as if another package declared them."""
    monkeypatch.setattr(registry, "plugin_entries", lambda group: [(n, v, "someone-else") for n, v in plugins])
    return Registry("acon.strategies", ContextStrategy, what="strategy")


def test_every_registry_lists_the_pyproject_entries_in_their_order():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    for reg in (STRATEGIES, SUITES, AGENTS, PROPOSERS, SEARCHES):
        assert reg.names() == tuple(declared[reg.group]), reg.group
        assert get_args(get_args(reg.union())[0]) == reg.classes()
    assert STRATEGIES.names() == STRATEGY_NAMES


def test_a_plugin_joins_after_the_built_ins_and_validates(monkeypatch):
    reg = fresh(monkeypatch, ("extra", "tests.test_registry:Extra"))
    assert reg.names()[-1] == "extra" and reg.names()[:-1] == STRATEGY_NAMES
    built = reg.adapter().validate_python({"type": "extra"})
    assert type(built) is reg.get("extra") and built.type == "extra"
    with pytest.raises(Exception, match="'extra'"):  # pydantic's unknown-tag error lists every tag
        reg.adapter().validate_python({"type": "extar"})


def test_an_unknown_name_is_one_line_listing_every_registered_one(monkeypatch):
    reg = fresh(monkeypatch, ("extra", "tests.test_registry:Extra"))
    with pytest.raises(ConfigError, match=r"^unknown strategy 'fiffo'; known: none, fifo, .*, oracle, extra$"):
        reg.get("fiffo")


def test_the_same_class_declared_twice_is_one_entry(monkeypatch):
    # An installed acon's metadata and the checkout both naming `fifo`, say.
    reg = fresh(monkeypatch, ("fifo", "optimizer.context.strategies.fifo:Fifo"))
    assert reg.names() == STRATEGY_NAMES and reg.get("fifo") is Fifo


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("tests.test_registry:FifoAgain", "strategy name 'fifo' is taken by optimizer.context.strategies.fifo.Fifo"),
        ("tests.test_registry:Missing", "fails to load: AttributeError"),
        ("no_such_module_anywhere:Thing", "fails to load: ModuleNotFoundError"),
        ("tests.test_registry:fresh", "is not a ContextStrategy subclass"),
        ("tests.test_registry:Untyped", "Untyped has no default for its `type` literal"),
    ],
)
def test_a_broken_plugin_is_one_line_naming_its_entry_point(monkeypatch, value, message):
    reg = fresh(monkeypatch, ("broken", value))
    with pytest.raises(PluginError) as caught:
        reg.classes()
    text = str(caught.value)
    assert text.startswith(f"entry point acon.strategies:broken (someone-else: {value})") and message in text
    assert "\n" not in text


def test_without_acon_entries_the_error_says_to_reinstall(monkeypatch):
    monkeypatch.setattr(registry, "own_entries", lambda group: [])
    with pytest.raises(PluginError, match="acon's own strategy entries are missing; reinstall acon"):
        fresh(monkeypatch).classes()


def test_own_entries_come_from_the_checkout_pyproject_else_the_installed_metadata(tmp_path):
    other = tmp_path / "pyproject.toml"
    other.write_text('[project]\nname = "not-acon"\n[project.entry-points."acon.strategies"]\nx = "a:b"\n')
    # Another project's pyproject is never read; the installed `acon` metadata (whatever it holds) is.
    assert ("x", "a:b") not in registry.own_entries("acon.strategies", other)
    mine = tmp_path / "mine.toml"
    mine.write_text('[project]\nname = "acon"\n[project.entry-points."acon.strategies"]\nx = "a:b"\n')
    assert registry.own_entries("acon.strategies", mine) == [("x", "a:b")]


def test_the_world_layer_imports_no_suite_package():
    code = "import sys, optimizer.world.suite; print(sorted(m for m in sys.modules if m.split('.')[0] == 'tasks'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.strip() == "[]"
