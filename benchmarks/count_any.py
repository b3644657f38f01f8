"""How much of the search and tracking code is typed `Any`, at one or more commits.

    python benchmarks/count_any.py                                  # e98cbd9 (before issue 29) and HEAD
    python benchmarks/count_any.py --rev e98cbd9 --rev HEAD --out benchmarks/results/any_counts.json

Counted per package, from the source as git stores it at each commit (the working tree is not read):

- *public with Any*: public functions and methods (module level, or in a public class; a dunder counts, a
  `_name` or a function nested in another does not) with `Any` anywhere in a parameter's or the return's
  annotation;
- of those, *codecs*: the JSON readers and writers (`to_dict`, `from_dict`, `read_event`, `read_json`,
  `write_json`);
- *dict[str, Any]* and *Mapping[str, Any]*: occurrences in the source text, private code and variables included.

The packages are those the search's code lived in before and after it was split: `optimizer/search`,
`optimizer/tracking`, `optimizer/report` (the report and the front, out of `search`), the module moved out of
`search` to another package (`optimizer/evaluate/scores.py`), so one commit's count covers the same code as
another's, and the JSON types the codecs use since (`optimizer/jsontypes.py`).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from optimizer.interrupts import run_main  # noqa: E402

PACKAGES = (
    "optimizer/search",
    "optimizer/tracking",
    "optimizer/report",
    "optimizer/evaluate/scores.py",
    "optimizer/jsontypes.py",
)
BEFORE = "e98cbd9"  # the last commit before the work of issue 29
CODECS = frozenset({"to_dict", "from_dict", "read_event", "read_json", "write_json"})
DICT_ANY = re.compile(r"\bdict\[str,\s*Any\]")
MAPPING_ANY = re.compile(r"\bMapping\[str,\s*Any\]")


@dataclass(frozen=True)
class Counts:
    files: int = 0
    public: int = 0  # public functions and methods
    public_any: int = 0
    codecs_any: int = 0
    dict_any: int = 0
    mapping_any: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(*(a + b for a, b in zip(asdict(self).values(), asdict(other).values(), strict=True)))


def _mentions_any(annotation: ast.expr | None) -> bool:
    if annotation is None:
        return False
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name) and node.id == "Any":
            return True
        if isinstance(node, ast.Attribute) and node.attr == "Any":
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a quoted annotation
            try:
                if _mentions_any(ast.parse(node.value, mode="eval").body):
                    return True
            except SyntaxError:
                continue
    return False


def signature_has_any(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    args = function.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return _mentions_any(function.returns) or any(_mentions_any(a.annotation) for a in every if a is not None)


def _is_public(name: str) -> bool:
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def public_functions(tree: ast.Module) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Module-level functions and the methods of module-level classes (nested ones too), public names only."""
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _is_public(node.name):
            yield node
        elif isinstance(node, ast.ClassDef) and _is_public(node.name):
            stack.extend(node.body)
        elif isinstance(node, ast.If):  # `if TYPE_CHECKING:` and other guarded definitions
            stack.extend([*node.body, *node.orelse])


def count_source(text: str) -> Counts:
    tree = ast.parse(text)
    functions = list(public_functions(tree))
    with_any = [f for f in functions if signature_has_any(f)]
    return Counts(
        files=1,
        public=len(functions),
        public_any=len(with_any),
        codecs_any=sum(f.name in CODECS for f in with_any),
        dict_any=len(DICT_ANY.findall(text)),
        mapping_any=len(MAPPING_ANY.findall(text)),
    )


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def sources(rev: str, packages: Iterable[str]) -> Iterator[tuple[str, str, str]]:
    """(package, path, text) of each Python file of `packages` at `rev`."""
    for package in packages:
        for path in _git("ls-tree", "-r", "--name-only", rev, "--", package).splitlines():
            if path.endswith(".py"):
                yield package, path, _git("show", f"{rev}:{path}")


def count_rev(rev: str, packages: Iterable[str] = PACKAGES) -> dict[str, Counts]:
    """Counts per package at `rev`, and their sum under `total` (a package absent at `rev` counts zero)."""
    out = {package: Counts() for package in packages}
    for package, _, text in sources(rev, out):
        out[package] += count_source(text)
    out["total"] = sum(out.values(), Counts())
    return out


def table(rev: str, commit: str, counts: dict[str, Counts]) -> str:
    header = ("package", "files", "public", "public with Any", "codecs with Any", "dict[str, Any]", "Mapping[str, Any]")
    lines = [f"{rev} ({commit})", " | ".join(header), " | ".join("---" for _ in header)]
    for name, c in counts.items():
        cells = (name, c.files, c.public, c.public_any, c.codecs_any, c.dict_any, c.mapping_any)
        lines.append(" | ".join(map(str, cells)))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", action="append", help=f"a commit to count (repeatable; default {BEFORE} and HEAD)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "any_counts.json")
    args = parser.parse_args(argv)
    result = {}
    for rev in args.rev or [BEFORE, "HEAD"]:
        commit = _git("rev-parse", "--short", rev).strip()
        counts = count_rev(rev)
        print(table(rev, commit, counts) + "\n")
        result[rev] = {"commit": commit, "counts": {name: asdict(c) for name, c in counts.items()}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"packages": list(PACKAGES), "revs": result}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    run_main(main, "count_any")
