"""False progress: a summary that says the agent did a step it has not done yet.

Small summarizers fold the task statement in with the results and retell its steps as done: under the seed's
sections the 0.5B and 1.5B local models wrote "The agent has called verify_customer for the customer before
sending the gift card." before any such call, and "The agent has called finish ..." halfway through. The reference
agent (tier 0) follows its script and never reads such a sentence; a real agent may trust it and skip the step,
so the screen counts it. A claim is a sentence in the past tense that names a tool the agent has not called yet,
outside a section of steps still to do, with no word of future or negation. A heuristic, by design on the side of
missing a claim: "has done what the skill requires" names no tool and is not counted.
"""

from __future__ import annotations

import re
from collections.abc import Collection

_DONE = re.compile(
    r"\b(has|have|had|was|were|already|did|called|used|sent|verified|reserved|completed|finished)\b", re.IGNORECASE
)
_PENDING = re.compile(
    r"\b(will|next|todo|to do|remaining|yet|not|never|must|should|need to|needs to|going to|pending|if)\b",
    re.IGNORECASE,
)
_HEADING = re.compile(r"^\s*(?:[-*]\s*)?#*\s*([A-Za-z][A-Za-z ]{1,30}):")
_PENDING_SECTIONS = {"todo", "next", "next steps", "remaining", "remaining steps", "plan"}


def false_claims(summary: str, not_called: Collection[str]) -> tuple[str, ...]:
    """The sentences of `summary` that say a tool of `not_called` was used (each once, in order)."""
    if not not_called:
        return ()
    names = re.compile(r"(?<![\w-])(" + "|".join(re.escape(n) for n in sorted(not_called)) + r")(?![\w-])")
    found: list[str] = []
    section = ""
    for line in summary.splitlines():
        heading = _HEADING.match(line)
        if heading:
            section = heading.group(1).strip().lower()
        if section in _PENDING_SECTIONS:
            continue
        for sentence in re.split(r"(?<=[.!?])\s+", line):
            said = " ".join(sentence.split())
            if names.search(said) and _DONE.search(said) and not _PENDING.search(said) and said not in found:
                found.append(said)
    return tuple(found)
