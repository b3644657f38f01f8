"""The test split is sealed: no source file names a test task of a built-in suite.

Method work (knobs, proposers, thresholds) is judged on train and validation tasks only; a rule, a comment
or a docstring that names a test task says a test-split result was read while building the method. The
test ids come from the suites themselves (`acon suites list`), so a suite that grows or re-splits is
checked as it is. A hand-written suite's own module names each of its tasks once, where it defines it.
Measured results and the report quoting them (`benchmarks/results/`, `benchmarks/README.md`) are where
test-split figures belong, and are not scanned.
"""

from __future__ import annotations

import inspect
import re
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from optimizer.world.suite import available_suites

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("optimizer", "tasks", "benchmarks", "experiments")
REPORTS = (ROOT / "benchmarks" / "results", ROOT / "benchmarks" / "README.md")
SUFFIXES = (".py", ".toml", ".md")


@cache
def sources() -> dict[Path, str]:
    found = {}
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in SUFFIXES or not path.is_file() or "__pycache__" in path.parts:
                continue
            if any(path == report or report in path.parents for report in REPORTS):
                continue
            found[path.resolve()] = path.read_text(encoding="utf-8")
    return found


def naming(ids: frozenset[str]) -> re.Pattern[str]:
    """Any of `ids` as a whole id: `refund-04` is not in `refund-045`, `multi_turn_base_8` not in `..._80`."""
    alternatives = "|".join(re.escape(i) for i in sorted(ids, key=len, reverse=True))
    return re.compile(rf"(?<![\w-])({alternatives})(?![\w-])")


def leaks(ids: frozenset[str], home: Path | None = None) -> list[str]:
    """`path: id (n times)` for every source naming a test id; `home` (the suite's module) may name each once."""
    pattern = naming(ids)
    out = []
    for path, text in sources().items():
        for task_id, times in Counter(m.group(1) for m in pattern.finditer(text)).items():
            if times > (1 if path == home else 0):
                out.append(f"{path.relative_to(ROOT)}: {task_id} ({times}x)")
    return out


@pytest.mark.parametrize("name", sorted(available_suites()))
def test_no_source_names_a_test_task(name: str):
    source = available_suites()[name]()
    if name.startswith("bfcl_"):
        from tasks.bfcl import install

        if not install.ready():
            pytest.skip("bfcl-eval not installed (acon setup)")
    suite = source.load()
    assert suite.test_ids
    home = Path(inspect.getsourcefile(type(source)) or "").resolve()
    assert leaks(suite.test_ids, home) == []


def test_an_id_is_found_whole_and_only_whole():
    pattern = naming(frozenset({"refund-04", "multi_turn_base_8"}))
    assert [m.group(1) for m in pattern.finditer("lost rows (`refund-04`); multi_turn_base_8: diff")] == [
        "refund-04",
        "multi_turn_base_8",
    ]
    assert not pattern.search("refund-045 xrefund-04 refund-04-b multi_turn_base_80 multi_turn_base_8_x")


def test_the_scan_reads_every_source_folder_and_finds_a_name_in_it():
    scanned = {path.relative_to(ROOT).parts[0] for path in sources()}
    assert scanned == set(SCANNED)
    assert not any(REPORTS[0] in path.parents or path == REPORTS[1] for path in sources())
    # A name the scan must find where it is defined: the module's own function.
    assert leaks(frozenset({"needed_units"})) != []
