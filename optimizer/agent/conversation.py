"""An episode's conversation as OpenAI chat messages: what a user's agent would hold before each request.

Raw tool results (checkpoint 1) with their runtime status, as the JSONL import reads it. Feeding these to a
fresh runtime before every step must rebuild the requests the agent loop sent (the loop is the runtime's
client); `tests/runtime/test_loop_equivalence.py` and `benchmarks/bench_runtime.py` rely on it.
"""

from __future__ import annotations

import json
from typing import Any

from optimizer.agent.episode import Episode


def conversation_before(episode: Episode, step: int) -> list[dict[str, Any]]:
    """The conversation before request `step` (system prompt excluded); notices have no OpenAI form."""
    messages: list[dict[str, Any]] = []
    for entry in episode.entries:
        if entry["visible_from"] > step:
            continue
        kind = entry["kind"]
        if kind in ("task", "user"):
            messages.append({"role": "user", "content": episode.text(entry["raw"])})
        elif kind == "action" and entry["calls"]:
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": c["id"],
                            "type": "function",
                            "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
                        }
                        for c in entry["calls"]
                    ],
                }
            )
        elif kind == "action":
            messages.append({"role": "assistant", "content": entry["answer"]})
        elif kind == "result":
            # Runtime status travels with the tool message: an error, a partial page (its class says so).
            partial = entry["retention"] == "error_partial" and not entry["is_error"]
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": entry["call"]["id"],
                    "content": episode.text(entry["raw"]),
                    "is_error": entry["is_error"],
                    "partial": partial,
                    "must_keep": entry["must_keep"],
                }
            )
        else:
            raise ValueError(f"episode {episode.task_id}: a {kind} entry has no OpenAI message form")
    return messages
