"""Why a failed episode failed, as a few named causes a report can count.

A tier-1 row that says 1 of 10 tells a user that the summaries hurt the real agent, not how. The checkers'
reasons do: the agent ran to its step cap, skipped a write or made it twice, broke a skill's rule, answered
nothing, or answered without a value the task needed. Counted per row, they say what a summary took away.

The reasons are written by acon's own checkers and agent loop, never by a tool; only the answer quoted inside
"answer '...' lacks ..." is the agent's, so a cause is read from the start of a reason, never from what it
quotes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# In the order a report lists them: the ones that end an episode first, then what its end state lacks.
CAUSES = (
    "step limit",
    "write missing",
    "write repeated",
    "rule broken",
    "no answer",
    "answer lacks a value",
    "other",
)

# The phrasings of the checkers of `reach_long`, `reach`, the built-in suite and the agent loop.
_PATTERNS = (
    ("step limit", re.compile(r"turn \d+ hit the step limit")),
    ("write missing", re.compile(r"no \w+ with |required step not done: |finish claimed without required step: ")),
    ("write repeated", re.compile(r"duplicate (write|refund)|\w+ repeated$")),
    ("rule broken", re.compile(r"lost rule |gift card sent before verify_customer")),
    ("no answer", re.compile(r"""answer (''|"") lacks |no final answer was given""")),
    ("answer lacks a value", re.compile(r"answer .* lacks |final answer does not report ", re.DOTALL)),
)


def cause_of(reason: str) -> str:
    """The named cause of one checker reason ("other" for a reason no pattern knows)."""
    return next((cause for cause, pattern in _PATTERNS if pattern.match(reason)), "other")


def causes_of(reasons: Iterable[str]) -> tuple[str, ...]:
    """An episode's distinct causes, in `CAUSES` order."""
    found = {cause_of(reason) for reason in reasons}
    return tuple(cause for cause in CAUSES if cause in found)


def count_causes(failed: Iterable[Iterable[str]]) -> dict[str, int]:
    """Failed episodes showing each cause (an episode counts once per cause, and may show several), in `CAUSES`
    order, causes no episode showed left out. A failure with no reason at all counts as "other"."""
    counts = dict.fromkeys(CAUSES, 0)
    for causes in failed:
        for cause in tuple(causes) or ("other",):
            counts[cause] += 1
    return {cause: n for cause, n in counts.items() if n}


def causes_said(counts: dict[str, int]) -> str:
    """`count_causes` in words: "step limit 4, write missing 3" ("none" when nothing failed)."""
    return ", ".join(f"{cause} {n}" for cause, n in counts.items()) or "none"
