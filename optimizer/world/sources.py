"""Where each literal of a reference solution comes from: which reference call's output first showed it.

An agent that lost a fact from its context can only think of recalling it if it knows which earlier
call the fact came from; that is task knowledge (an order's line ids are in the order), not knowledge
of the cleared text. The sources are found by replaying the reference once in a fresh environment and
are cached per task object, so screening pays for it once per task and process.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from optimizer.world.provenance import occurs
from optimizer.world.task import Task

_CACHE: OrderedDict[int, tuple[Task, dict[str, str]]] = OrderedDict()
_LOCK = threading.Lock()
_CACHE_SIZE = 4096


def need_sources(task: Task) -> dict[str, str]:
    """Literal -> id of the reference call whose output first carried it (absent: from the user)."""
    with _LOCK:
        hit = _CACHE.get(id(task))
        if hit is not None and hit[0] is task:
            _CACHE.move_to_end(id(task))
            return hit[1]
    sources = _replay_sources(task)
    with _LOCK:
        _CACHE[id(task)] = (task, sources)  # holding the task keeps its id from being reused
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return sources


def _replay_sources(task: Task) -> dict[str, str]:
    literals = {n.literal for step in task.reference or () for n in step.needs}
    found: dict[str, str] = {}
    env = task.make_env()
    try:
        for step in task.reference or ():
            if step.call is None or len(found) == len(literals):
                continue
            output = env.call(step.call, step.turn).content
            for literal in literals - found.keys():
                if occurs(literal, output):
                    found[literal] = step.call.id
    finally:
        env.close()
    return found
