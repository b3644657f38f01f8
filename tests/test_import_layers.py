"""The import graph of `optimizer/` and `tasks/`, computed from the source: no cycle among packages, every
import goes down the layer order declared at the top of `optimizer/__init__.py`, and no cycle among modules.

Every `import` statement counts, at module level and inside functions (a lazy import still runs
against the order when it runs); only the body of `if TYPE_CHECKING:` is exempt, because it never runs.
Between the search and tracking even that counts: of each other they may import only what `ACROSS` lists
(tracking the search's events), because a type named across is a dependency all the same.

Among modules, a function-level import that closes a circle only defers it to the first call, so it counts
too. An import statement is an edge to each module whose names it reads: `import a.b` (with or without
`as`) reads `a.b`; `from a import b` reads `a`'s namespace, and `a.b` too when `b` is a submodule. So a child
that imports a sibling through its package (`from pkg import sibling`) depends on the package's `__init__`,
which, when it imports that child, is still running: the child then gets `sibling` only by Python's fallback
to the submodule, and a name the `__init__` defines further down fails as "partially initialized". The
parent packages whose `__init__` Python runs before any submodule are not edges: each package face that
hands on its children's names would otherwise be a circle with every child that imports a sibling.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGES = ("optimizer", "tasks")

# Between the search and tracking, the modules one may import of the other, `if TYPE_CHECKING:` included: the
# job publishes typed events and tracking subscribes; what both need besides (the report, the front) is `report`.
ACROSS: dict[tuple[str, str], set[str]] = {
    ("tracking", "search"): {"optimizer.search.events"},
    ("search", "tracking"): set(),
}

# (importing file, imported layer) pairs allowed against the order (the test below fails while a listed
# import is gone). None: suites register by entry point, so `world/suite.py` no longer imports `tasks`.
ALLOWED: set[tuple[str, str]] = set()


@dataclass(frozen=True)
class Import:
    path: str  # the importing file, relative to the root
    line: int
    source: str  # the importing file's layer unit
    target: str  # the imported module's layer unit
    module: str  # the imported module, as written (resolved if relative)

    def where(self) -> str:
        return f"{self.path}:{self.line} imports {self.module}"


def module_name(path: Path, root: Path) -> list[str]:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def unit(parts: Sequence[str]) -> str:
    """The layer unit of a module: `tasks` as a whole, `optimizer` itself, or a child of `optimizer`."""
    if parts[0] == "optimizer" and len(parts) > 1:
        return parts[1]
    return parts[0]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.AST, *, type_checking: bool = False) -> Iterable[ast.Import | ast.ImportFrom]:
    """Every import statement of `tree`; those under `if TYPE_CHECKING:` only when `type_checking` asks."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        if not type_checking and isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _targets(node: ast.Import | ast.ImportFrom, here: list[str], is_package: bool, root: Path) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = here if is_package else here[:-1]
        base = base[: len(base) - (node.level - 1)]
        module = ".".join([*base, *([node.module] if node.module else [])])
    else:
        module = node.module or ""
    if module not in PACKAGES:
        return [module]
    # `from optimizer import x`: x is a submodule (its own unit) or a name of the root package.
    found = []
    for alias in node.names:
        child = root / module / alias.name
        found.append(f"{module}.{alias.name}" if child.is_dir() or child.with_suffix(".py").exists() else module)
    return found


def _statements(
    root: Path, *, type_checking: bool = False
) -> Iterable[tuple[Path, list[str], ast.Import | ast.ImportFrom]]:
    """Each import statement of the packages under `root`, with its file and that file's module name."""
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            here = module_name(path, root)
            tree = ast.parse(path.read_text(), filename=str(path))
            for node in sorted(_import_nodes(tree, type_checking=type_checking), key=lambda node: node.lineno):
                yield path, here, node


def imports(root: Path) -> list[Import]:
    """Every import between two layer units in the packages under `root`."""
    found = []
    for path, here, node in _statements(root):
        for module in _targets(node, here, path.name == "__init__.py", root):
            parts = module.split(".")
            if parts[0] not in PACKAGES:
                continue
            source, target = unit(here), unit(parts)
            if source != target:
                rel = path.relative_to(root).as_posix()
                found.append(Import(rel, node.lineno, source, target, module))
    return found


def _is_module(name: str, root: Path) -> bool:
    path = root.joinpath(*name.split("."))
    return name.split(".")[0] in PACKAGES and ((path / "__init__.py").exists() or path.with_suffix(".py").exists())


def _modules_read(node: ast.Import | ast.ImportFrom, here: list[str], is_package: bool, root: Path) -> list[str]:
    """The modules of the packages whose names one import statement reads (see the module docstring)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if _is_module(alias.name, root)]
    base = here if is_package else here[:-1]
    base = base[: len(base) - (node.level - 1)] if node.level else []
    module = ".".join([*base, *([node.module] if node.module else [])])
    read = [module, *(f"{module}.{alias.name}" for alias in node.names)]
    return [name for name in read if _is_module(name, root)]


def module_imports(root: Path, *, type_checking: bool = False) -> list[Import]:
    """Every import from one module of the packages under `root` to another, by module name."""
    found = []
    for path, here, node in _statements(root, type_checking=type_checking):
        source = ".".join(here)
        for target in _modules_read(node, here, path.name == "__init__.py", root):
            if target != source:
                found.append(Import(path.relative_to(root).as_posix(), node.lineno, source, target, target))
    return found


def crossings(found: Iterable[Import], allowed: Mapping[tuple[str, str], set[str]]) -> list[str]:
    """Imports from one unit of a pair in `allowed` into the other, of a module not listed for that pair."""
    problems = []
    for imp in found:
        pair = (unit(imp.source.split(".")), unit(imp.target.split(".")))
        if pair in allowed and imp.target not in allowed[pair]:
            listed = ", ".join(sorted(allowed[pair])) or "nothing"
            problems.append(f"{imp.where()}: {pair[0]} may import {listed} of {pair[1]}")
    return problems


def declared_layers(docstring: str) -> list[set[str]]:
    """The indented block after 'bottom first:' in the package docstring, one layer per line."""
    if "bottom first:" not in docstring:
        raise ValueError("optimizer/__init__.py declares no layers (an indented block after 'bottom first:')")
    lines = docstring.split("bottom first:", 1)[1].splitlines()[1:]
    lines = lines[1:] if lines and not lines[0].strip() else lines
    layers = []
    for line in lines:
        if not line.startswith("    "):
            break
        layers.append({name.strip() for name in line.split(",")})
    return layers


def find_cycle(found: Iterable[Import]) -> list[Import] | None:
    """One cycle among the sources and targets of `found` (units or modules), as the imports that close it."""
    edges: dict[str, dict[str, Import]] = {}
    for imp in found:
        edges.setdefault(imp.source, {}).setdefault(imp.target, imp)
    state: dict[str, str] = {}  # unit -> "open" (on the current path) | "done"
    path: list[Import] = []

    def visit(node: str) -> list[Import] | None:
        state[node] = "open"
        for target, imp in sorted(edges.get(node, {}).items()):
            if state.get(target) == "open":  # on the current path: the path from it, plus this edge
                start = next(i for i, step in enumerate(path) if step.source == target)
                return [*path[start:], imp]
            if target not in state:
                path.append(imp)
                cycle = visit(target)
                if cycle:
                    return cycle
                path.pop()
        state[node] = "done"
        return None

    for node in sorted(edges):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def upward(found: Iterable[Import], layers: Sequence[set[str]]) -> list[str]:
    """Imports that do not go to a strictly lower layer, each as one line naming file:line."""
    level = {name: i for i, layer in enumerate(layers) for name in layer}
    problems = []
    for imp in found:
        if imp.source not in level or imp.target not in level:
            missing = imp.source if imp.source not in level else imp.target
            problems.append(f"{imp.where()}: '{missing}' is in no layer (add it to optimizer/__init__.py)")
        elif level[imp.target] >= level[imp.source]:
            kind = "a peer" if level[imp.target] == level[imp.source] else "a higher layer"
            problems.append(f"{imp.where()}: {imp.source} may not import {imp.target} ({kind})")
    return problems


def describe(cycle: Sequence[Import]) -> str:
    units = " -> ".join([cycle[0].source, *(imp.target for imp in cycle)])
    return units + "\n" + "\n".join(f"  {imp.where()}" for imp in cycle)


def checked(found: Iterable[Import], allowed: set[tuple[str, str]]) -> list[Import]:
    return [imp for imp in found if (imp.path, imp.target) not in allowed]


@pytest.fixture(scope="module")
def graph() -> list[Import]:
    return imports(ROOT)


@pytest.fixture(scope="module")
def layers() -> list[set[str]]:
    tree = ast.parse((ROOT / "optimizer" / "__init__.py").read_text())
    return declared_layers(ast.get_docstring(tree) or "")


def test_no_cycle_among_packages(graph):
    cycle = find_cycle(checked(graph, ALLOWED))
    assert cycle is None, "import cycle: " + describe(cycle)


def test_no_cycle_among_modules():
    cycle = find_cycle(module_imports(ROOT))
    assert cycle is None, "import cycle: " + describe(cycle)


def test_every_import_goes_down_the_declared_layers(graph, layers):
    problems = upward(checked(graph, ALLOWED), layers)
    assert not problems, "\n".join(problems)


def test_search_and_tracking_share_nothing_but_the_events():
    found = module_imports(ROOT, type_checking=True)
    assert any(imp.target == "optimizer.search.events" and imp.path.startswith("optimizer/tracking/") for imp in found)
    problems = crossings(found, ACROSS)
    assert not problems, "\n".join(problems)


def test_every_unit_has_exactly_one_layer(layers):
    names = [name for layer in layers for name in layer]
    assert len(names) == len(set(names)), f"a name in two layers: {sorted(names)}"
    units = {unit(module_name(p, ROOT)) for package in PACKAGES for p in (ROOT / package).rglob("*.py")}
    assert units <= set(names), f"not in any layer of optimizer/__init__.py: {sorted(units - set(names))}"


def test_each_allowed_exception_is_still_needed(graph):
    present = {(imp.path, imp.target) for imp in graph}
    gone = ALLOWED - present
    assert not gone, f"no longer imported, remove from ALLOWED: {sorted(gone)}"


def _tree(root: Path, files: Mapping[str, str]) -> Path:
    for name, text in {"optimizer/__init__.py": "", "tasks/__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_a_cycle_and_an_upward_import_are_reported_with_their_lines(tmp_path):
    root = _tree(
        tmp_path,
        {
            "optimizer/low/__init__.py": "",
            "optimizer/low/a.py": "import os\n\n\ndef lazy():\n    from optimizer.high import b\n",
            "optimizer/high/__init__.py": "",
            "optimizer/high/b.py": "from optimizer.low import a\n",
        },
    )
    found = imports(root)
    cycle = find_cycle(found)
    assert cycle is not None
    assert describe(cycle).splitlines() == [
        "high -> low -> high",
        "  optimizer/high/b.py:1 imports optimizer.low",
        "  optimizer/low/a.py:5 imports optimizer.high",
    ]
    problems = upward(found, [{"optimizer"}, {"low"}, {"high"}])
    assert problems == ["optimizer/low/a.py:5 imports optimizer.high: low may not import high (a higher layer)"]


def test_a_module_cycle_through_a_function_or_a_package_face_is_reported(tmp_path):
    files = {
        # `loop.step` imports `loop.state` only when called: still a circle.
        "optimizer/loop/__init__.py": "",
        "optimizer/loop/step.py": "from optimizer.loop.state import saved\n",
        "optimizer/loop/state.py": "def saved():\n    from optimizer.loop import step\n",
        # The face hands on `suite`'s class; `suite` reads its sibling through the face.
        "tasks/deck/__init__.py": "from tasks.deck.suite import Deck\n",
        "tasks/deck/suite.py": "from tasks.deck import cards\n\n\nclass Deck:\n    pass\n",
        "tasks/deck/cards.py": "",
    }
    cycle = find_cycle(module_imports(_tree(tmp_path, files)))
    assert cycle is not None
    assert describe(cycle).splitlines() == [
        "optimizer.loop.state -> optimizer.loop.step -> optimizer.loop.state",
        "  optimizer/loop/state.py:2 imports optimizer.loop.step",
        "  optimizer/loop/step.py:1 imports optimizer.loop.state",
    ]
    files["optimizer/loop/state.py"] = "def saved():\n    pass\n"
    cycle = find_cycle(module_imports(_tree(tmp_path, files)))
    assert cycle is not None
    assert describe(cycle).splitlines()[0] == "tasks.deck -> tasks.deck.suite -> tasks.deck"
    # The sibling named as a module, or the face imported only for type checking: no circle.
    files["tasks/deck/suite.py"] = "import tasks.deck.cards as cards\n"
    assert find_cycle(module_imports(_tree(tmp_path, files))) is None
    files["tasks/deck/suite.py"] = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tasks import deck\n"
    assert find_cycle(module_imports(_tree(tmp_path, files))) is None


def test_peers_unplaced_units_and_relative_imports_are_reported(tmp_path):
    root = _tree(
        tmp_path,
        {
            "optimizer/left.py": "from . import right\n",
            "optimizer/right.py": "",
            "optimizer/stray/__init__.py": "from ..left import x\n",
            "tasks/suite.py": "from optimizer import __version__\n",
        },
    )
    problems = upward(imports(root), [{"optimizer"}, {"left", "right"}, {"tasks"}])
    assert problems == [
        "optimizer/left.py:1 imports optimizer.right: left may not import right (a peer)",
        "optimizer/stray/__init__.py:1 imports optimizer.left: 'stray' is in no layer (add it to "
        "optimizer/__init__.py)",
    ]


def test_type_checking_imports_are_exempt_and_nothing_else_is(tmp_path):
    root = _tree(
        tmp_path,
        {
            "optimizer/low.py": (
                "from typing import TYPE_CHECKING\n"
                "import typing\n"
                "if TYPE_CHECKING:\n    from optimizer import high\n"
                "if typing.TYPE_CHECKING:\n    import optimizer.high\n"
                "else:\n    import optimizer.high as runs\n"
                "try:\n    import tasks\nexcept ImportError:\n    pass\n"
            ),
            "optimizer/high.py": "",
        },
    )
    assert [imp.where() for imp in imports(root)] == [
        "optimizer/low.py:8 imports optimizer.high",
        "optimizer/low.py:10 imports tasks",
    ]


def test_an_import_across_search_and_tracking_is_reported_even_for_type_checking(tmp_path):
    files = {
        "optimizer/search/__init__.py": "",
        "optimizer/search/events.py": "",
        "optimizer/search/front.py": "",
        "optimizer/tracking/__init__.py": "",
        "optimizer/tracking/hooks.py": "from optimizer.search.events import RunEvaluated\n",
        "optimizer/tracking/pareto.py": (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from optimizer.search import front\n"
        ),
    }
    found = module_imports(_tree(tmp_path, files), type_checking=True)
    assert crossings(found, ACROSS) == [
        "optimizer/tracking/pareto.py:3 imports optimizer.search: tracking may import optimizer.search.events of "
        "search",
        "optimizer/tracking/pareto.py:3 imports optimizer.search.front: tracking may import optimizer.search.events "
        "of search",
    ]
    files["optimizer/search/job.py"] = "def publish():\n    import optimizer.tracking.hooks\n"
    found = module_imports(_tree(tmp_path, files), type_checking=True)
    assert crossings(found, ACROSS)[0] == (
        "optimizer/search/job.py:2 imports optimizer.tracking.hooks: search may import nothing of tracking"
    )


def test_the_declared_layers_are_read_from_the_docstring():
    text = "Intro.\n\nbottom first:\n\n    a\n    b, c\n\nWhy.\n"
    assert declared_layers(text) == [{"a"}, {"b", "c"}]
