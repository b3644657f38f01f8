"""Style is part of the build: ruff's linter and formatter must pass on the whole tree, and no function in
`optimizer/` or `tasks/` grows past 80 lines (a function that long builds several things; each gets a name)."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT

TREE = ["optimizer", "tasks", "tests", "benchmarks", "experiments"]
MAX_FUNCTION_LINES = 80
PACKAGES = ("optimizer", "tasks")


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["check", "format"])
def test_ruff_is_clean(command):
    result = subprocess.run([sys.executable, "-m", "ruff", *command, *TREE], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-1000:]


def _functions(node: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function under `node` with its qualified name (`Class.method`, `outer.inner`)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = f"{prefix}{child.name}"
            if not isinstance(child, ast.ClassDef):
                yield name, child
            yield from _functions(child, f"{name}.")
        else:
            yield from _functions(child, prefix)


def long_functions(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, int]:
    """`path:qualified name` -> lines (from `def` to its last line) of each function over the limit."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            for name, node in _functions(ast.parse(path.read_text(), str(path))):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    found[f"{path.relative_to(root).as_posix()}:{name}"] = lines
    return found


def test_no_function_is_longer_than_the_limit():
    over = long_functions(ROOT)
    assert not over, f"functions over {MAX_FUNCTION_LINES} lines (split what each builds into named parts): {over}"


def test_a_long_method_or_nested_function_is_found_by_its_qualified_name(tmp_path):
    lines = [f"x{i} = {i}" for i in range(MAX_FUNCTION_LINES)]  # with its `def`: one line over the limit
    method = "".join(f"        {line}\n" for line in lines)
    nested = "".join(f"        {line}\n" for line in ["def inner():", *(f"    {line}" for line in lines)])
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(
        f"class A:\n    def long(self):\n{method}\n    def short(self):\n        pass\n\n\ndef outer():\n{nested}"
    )
    assert long_functions(tmp_path, ("pkg",)) == {
        "pkg/m.py:A.long": MAX_FUNCTION_LINES + 1,
        "pkg/m.py:outer": MAX_FUNCTION_LINES + 2,
        "pkg/m.py:outer.inner": MAX_FUNCTION_LINES + 1,
    }
