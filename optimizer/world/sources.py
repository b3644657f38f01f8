"""Where each literal of a reference solution comes from: which reference calls' outputs show it.

An agent that lost a fact from its context can only think of recalling it if it knows which earlier
call the fact came from; that is task knowledge (an order's line ids are in the order), not knowledge
of the cleared text. The sources are found by replaying the reference once in a fresh environment and
are cached per task content, so screening pays for it once per task and process, and a task built again
from a lazy suite (`TaskList`) still hits.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

from optimizer.world.needs import occurs
from optimizer.world.task import ReferenceStep, Task

# Only the sources are kept, never the task: holding tasks here kept thousands of worlds alive.
_CACHE: OrderedDict[str, dict[str, tuple[int, ...]]] = OrderedDict()
_LOCK = threading.Lock()
_CACHE_SIZE = 4096


def need_sources(task: Task) -> dict[str, str]:
    """Literal -> id of the reference call whose output first carried it (absent: from the user)."""
    reference = task.reference or ()
    return {literal: _call_id(reference[steps[0]]) for literal, steps in literal_carriers(task).items()}


def literal_carriers(task: Task) -> dict[str, tuple[int, ...]]:
    """Literal -> indices of the reference steps whose outputs show it, in order (absent: no output does).

    The tier-0 oracle reads it to keep a literal in the last output that shows it before it is used."""
    key = _content_key(task)
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit
    carriers = _replay_carriers(task)
    with _LOCK:
        _CACHE[key] = carriers
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return carriers


def _call_id(step: ReferenceStep) -> str:
    return step.call.id if step.call is not None else ""  # only call steps have outputs


def _content_key(task: Task) -> str:
    """Equal for equal tasks: two suites may both have a `refund-00`, with different worlds (a reference's
    arguments and needs carry the drawn values, so they tell the two apart)."""
    text = repr((task.suite, task.id, task.turns, task.reference))
    return hashlib.sha256(text.encode()).hexdigest()


def _replay_carriers(task: Task) -> dict[str, tuple[int, ...]]:
    literals = {n.literal for step in task.reference or () for n in step.needs}
    found: dict[str, list[int]] = {}
    env = task.make_env()
    try:
        for index, step in enumerate(task.reference or ()):
            if step.call is None:
                continue
            output = env.call(step.call, step.turn).content
            for literal in literals:
                if occurs(literal, output):
                    found.setdefault(literal, []).append(index)
    finally:
        env.close()
    return {literal: tuple(steps) for literal, steps in found.items()}
