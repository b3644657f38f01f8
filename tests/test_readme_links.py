"""Every relative link in the READMEs reaches a file, and every `#anchor` a heading there: sections move between
the README and `benchmarks/README.md`, and a link left behind fails here instead of on a reader."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

DOCUMENTS = [ROOT / "README.md", ROOT / "benchmarks" / "README.md"]


def anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation but `-` and `_` dropped, spaces to `-`."""
    headings = re.findall(r"^#+ (.*)$", markdown, re.M)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def broken_links(document: Path) -> list[str]:
    broken = []
    for link in re.findall(r"\]\(([^)\s]+)\)", document.read_text()):
        if re.match(r"[a-z]+:", link):
            continue
        path, _, anchor = link.partition("#")
        target = (document.parent / path) if path else document
        if not target.exists():
            broken.append(f"{link}: no such file")
        elif anchor and target.suffix == ".md" and anchor not in anchors(target.read_text()):
            broken.append(f"{link}: no such heading")
    return broken


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_reaches_its_file_and_heading(document):
    assert broken_links(document) == []


def test_a_link_to_a_heading_that_moved_is_caught(tmp_path):
    (tmp_path / "other.md").write_text("# Title\n\n## Summary instructions, step by step (`bench.py`)\n")
    document = tmp_path / "README.md"
    document.write_text(
        "[ok](other.md#summary-instructions-step-by-step-benchpy) [moved](#summary-instructions-step-by-step-benchpy)"
        " [gone](missing.md) [web](https://example.org/x)\n"
    )
    assert broken_links(document) == [
        "#summary-instructions-step-by-step-benchpy: no such heading",
        "missing.md: no such file",
    ]
