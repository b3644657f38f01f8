"""Every benchmark script ends the same way, through `optimizer.interrupts.run_main`: SIGTERM stops the model
servers it started (Python's default ends the process at once and leaves them running), its exit code is
what `main` returns, and an `AconError` (an endpoint outage) is one line naming the script."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

SCRIPTS = sorted((ROOT / "benchmarks").glob("*.py"))


def main_block(path: Path) -> list[str]:
    """The statements of the script's `if __name__ == "__main__":` block, as source."""
    tree = ast.parse(path.read_text())
    blocks = [
        node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "__name__ == '__main__'"
    ]
    assert len(blocks) == 1, f"{path.name}: {len(blocks)} `__main__` blocks"
    return [ast.unparse(statement) for statement in blocks[0].body]


def imports_run_main(path: Path) -> bool:
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module == "optimizer.interrupts"
        and any(alias.name == "run_main" and alias.asname is None for alias in node.names)
        for node in ast.parse(path.read_text()).body
    )


def test_every_benchmark_runs_its_main_through_run_main():
    assert any(path.name.startswith("bench_") for path in SCRIPTS)
    wrong = {
        path.name: main_block(path)
        for path in SCRIPTS
        if main_block(path) != [f"run_main(main, {path.stem!r})"] or not imports_run_main(path)
    }
    assert not wrong, f"each `__main__` block must be exactly `run_main(main, '<script name>')`: {wrong}"
