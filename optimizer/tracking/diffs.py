"""Side-by-side HTML diffs: MLflow's artifact viewer previews `.html`, never `.diff` or `.patch`."""

from __future__ import annotations

import difflib

from optimizer.context.guideline import Guideline

WRAP_COLUMN = 90


def side_by_side(
    old: str, new: str, *, from_desc: str = "before", to_desc: str = "after", context: bool = False
) -> str:
    """A complete HTML page showing `old` and `new` side by side, changes highlighted.

    `context=True` shows only changed lines with a few lines around them (for long texts).
    """
    differ = difflib.HtmlDiff(wrapcolumn=WRAP_COLUMN)
    return differ.make_file(
        old.splitlines(), new.splitlines(), fromdesc=from_desc, todesc=to_desc, context=context, numlines=3
    )


def guideline_diff(old: Guideline, new: Guideline) -> str:
    """Both guideline files (front matter with the policy, then both instructions) side by side."""
    return side_by_side(
        old.to_markdown(),
        new.to_markdown(),
        from_desc=f"{old.name} {old.version}",
        to_desc=f"{new.name} {new.version}",
    )
