"""A long synthetic conversation, as a user's agent holds it, and the digest of each request made for it.

Shared by the incremental-`compact` tests and the script that recorded the requests of the algorithm
before it was incremental (`tests/runtime/data/compact_requests.json`): both must build the same messages.
Every kind of message the runtime ingests appears: static reads (repeated, so the latest-read rule
applies), a skill, polled state, writes (receipts), errors, assistant text beside calls, later user turns
and a final answer.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

RETENTION = {
    "read_page": "static",
    "poll_status": "dynamic_state",
    "read_skill": "skill",
    "save_note": {"side_effect": True},
}


def _page(step: int) -> str:
    words = " ".join(f"w{step % 37}x{j}" for j in range(40 + (step * 7) % 160))
    return f"Archive page {step % 37}, key K{step % 37:05d}X.\n{words}"


def _call(step: int) -> tuple[str, dict[str, Any], str, bool]:
    """(tool, arguments, result, is_error) of one step."""
    if step == 1:
        return "read_skill", {"name": "archive"}, "SKILL archive: always cite the page's key.\n" + "rule " * 300, False
    if step % 11 == 5:
        return "save_note", {"text": f"note {step}"}, f"saved note N{step} (status: ok)", False
    if step % 13 == 7:
        return "read_page", {"page": 999}, "Error: page 999 does not exist.", True
    if step % 5 == 3:
        return "poll_status", {"job": "J1"}, f"job J1: running, {step} of many done\n" + "x " * (step % 90), False
    return "read_page", {"page": step % 37}, _page(step), False


def steps(count: int) -> Iterator[list[dict[str, Any]]]:
    """The messages each step adds: the assistant's call and its result, sometimes a user turn first."""
    for step in range(count):
        added: list[dict[str, Any]] = []
        if step and step % 97 == 0:
            added.append({"role": "user", "content": f"Also check page {step % 37} again."})
        tool, arguments, result, is_error = _call(step)
        call = {
            "id": f"call_{step}",
            "type": "function",
            "function": {"name": tool, "arguments": json.dumps(arguments)},
        }
        text = f"Step {step}: reading on." if step % 17 == 0 else None
        added.append({"role": "assistant", "content": text, "tool_calls": [call]})
        tool_message: dict[str, Any] = {"role": "tool", "tool_call_id": f"call_{step}", "content": result}
        if is_error:
            tool_message["is_error"] = True
        added.append(tool_message)
        yield added
    yield [{"role": "assistant", "content": "Page 0's key is K00000X."}]


def opening() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You read archive pages with read_page and save notes with save_note."},
        {"role": "user", "content": "Read the archive, keep notes, then give page 0's key."},
    ]


def digest(request: list[dict[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(request, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]
