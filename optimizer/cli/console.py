"""Terminal output for the CLI. Everything acon prints may carry untrusted text (guideline names, task
turns, missing literals, file paths), so the consoles parse no markup and run no highlighter: a name like
`[/oops]` is printed as written instead of raising rich's MarkupError, and a 200k-character name does not
send rich's regex highlighter into a long backtrack. Styling is added only through `Text` spans.
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text


def plain_console(*, stderr: bool = False, width: int | None = None) -> Console:
    return Console(stderr=stderr, width=width, markup=False, highlight=False, emoji=False)


def log_line(prefix: str, message: str, *, style: str | None = None) -> Text:
    """`prefix` dimmed, then `message` as written (in `style` if given)."""
    return Text.assemble((prefix, "dim"), " ", (message, style or ""))


def terminal_width() -> int:
    return Console().width
