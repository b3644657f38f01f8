"""Why a real agent failed under compression: the behavioural cause beside the missing facts.

At tier 0 a failure is always a fact the reference agent could not see. A real agent also fails with
every fact in front of it, recalls what it need not, recalls the same handle again and again, calls
`recall` on something that is not a handle, or copies a neighbour of the needed value. Each of these asks
for a different fix (keep the fact, say in the placeholder what it holds, make a repeated recall cheap),
so the diff names one. Deterministic: read off the two episodes and the task's reference.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from optimizer.agent.episode import Episode
from optimizer.context.recall import RECALL_TOOL
from optimizer.world.needs import occurs
from optimizer.world.task import NeedKind, Task

AGENT_VARIANCE = "the agent's own variance (it left full context's path at an identical request)"
RECALL_LOOP = "recall loop"
RECALL_MISUSE = "recall on something that is not a handle"
RECALL_NOT_MADE = "recall not made"
WRONG_ROW = "the right kind of fact from the wrong row"
FACT_MISSING = "fact missing"
VISIBLE_UNUSED = "fact visible but not used"
CAUSES = (AGENT_VARIANCE, RECALL_LOOP, RECALL_MISUSE, RECALL_NOT_MADE, WRONG_ROW, FACT_MISSING, VISIBLE_UNUSED)

# The same handle recalled this many times is a loop, whatever the agent did in between.
LOOP_REPEATS = 3


def behavioural_cause(
    compressed: Episode, task: Task | None, missing: Sequence[str], full: Episode | None = None
) -> str:
    """The first cause that explains the compressed episode's failure, in order of how directly it does.

    `missing`: the needed literals the provenance diff found absent from the compressed request. `full`: the
    full-context episode it is paired with; where the two parted at a request both sent alike, compression had
    not yet changed anything the agent saw, and the failure is the agent's sampling, not compression's doing.
    """
    if full is not None and parted_at_identical_request(full, compressed):
        return AGENT_VARIANCE
    recalls = [c for c in compressed.tool_calls if c.name == RECALL_TOOL]
    if any(c.is_error for c in recalls):
        return RECALL_MISUSE
    if recalls and max(Counter(c.signature for c in recalls).values()) >= LOOP_REPEATS:
        return RECALL_LOOP
    cleared = _cleared_entries(compressed)
    if missing and any(_held_by(compressed, literal, cleared) for literal in missing):
        return RECALL_NOT_MADE
    if _wrong_row(compressed, task, missing):
        return WRONG_ROW
    if missing:
        return FACT_MISSING
    return VISIBLE_UNUSED


def _cleared_entries(episode: Episode) -> dict[int, tuple[str, ...]]:
    """Entries some record replaced by a placeholder (clearing or offloading), with the handles it gave."""
    out: dict[int, tuple[str, ...]] = {}
    for record in episode.records:
        if record.action in ("clear", "offload"):
            for entry_id in record.entry_ids:
                out[entry_id] = (*out.get(entry_id, ()), *record.handles)
    return out


def _held_by(episode: Episode, literal: str, cleared: dict[int, tuple[str, ...]]) -> bool:
    """Whether a result that held `literal` was cleared behind a handle the agent never recalled."""
    recalled = " ".join(json.dumps(dict(c.arguments)) for c in episode.tool_calls if c.name == RECALL_TOOL)
    return any(
        entry.id in cleared
        and entry.kind == "result"
        and occurs(literal, episode.text(entry.raw))
        and not any(handle in recalled for handle in cleared[entry.id])
        for entry in episode.entries
    )


def _wrong_row(episode: Episode, task: Task | None, missing: Sequence[str]) -> bool:
    """A value need the context still showed, whose guess (a sibling of the same shape) the agent wrote where
    the literal belonged: it read the wrong row, it did not lack the right one."""
    if task is None or not task.reference:
        return False
    written = " ".join(json.dumps(dict(c.arguments)) for c in episode.tool_calls if c.name != RECALL_TOOL) + " ".join(
        a or "" for a in episode.answers
    )
    for step in task.reference:
        for need in step.needs:
            if need.kind is not NeedKind.VALUE or need.guess is None or need.literal in missing:
                continue
            shown = need.shown_as or need.literal
            if occurs(str(need.guess), written) and not occurs(shown, written):
                return True
    return False


def parted_at_identical_request(full: Episode, compressed: Episode) -> bool:
    """Whether the first step where the two episodes acted differently had the same request in both.

    The request is the messages as sent, system prompt first (the JSON-action agent lists its tools there), so an
    identical request means the same input; a different action from it is the model's sampling (at a temperature
    above 0, or a server that batches requests nondeterministically), which no guideline can cause or fix.
    """
    for ours, theirs in zip(full.steps, compressed.steps, strict=False):
        if _acted(ours.action) != _acted(theirs.action):
            return ours.request == theirs.request
    return False  # one is a prefix of the other: they parted where one of them stopped, not at a request


def _acted(action: Mapping[str, Any]) -> tuple[object, ...]:
    calls = tuple((c["name"], json.dumps(c.get("arguments"), sort_keys=True)) for c in action.get("calls") or ())
    return calls, action.get("answer"), action.get("malformed")
