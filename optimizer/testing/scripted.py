"""A deterministic stand-in for every model role, for tests and overhead benchmarks.

It answers compressor prompts with a crude, lossy compression (the head of the fenced data), DSPy
programs with well-formed field blocks, and agent requests with `finish`. It is not a model; it
exists so the loop logic can be tested exactly and quickly.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"<data source=\"([^\"]+)\">\n(.*?)\n</data>", re.DOTALL)
_OUTPUT_FIELDS = re.compile(r"Your output fields are:(.*?)(?:All interactions|\n\n\[\[|$)", re.DOTALL)
_FIELD = re.compile(r"`(\w+)`")


def scripted_models(request: dict[str, Any], *, keep_fraction: float = 0.35) -> str:
    messages = request.get("messages", [])
    system = str(messages[0].get("content", "")) if messages else ""
    user = str(messages[-1].get("content", "")) if messages else ""
    if "[[ ## " in system or "[[ ## " in user:
        return _dspy_reply(system, user)
    if "compress the working context" in system:
        return _compress(user, keep_fraction)
    if "Provide the new instructions within ``` blocks" in user:  # GEPA's reflective proposer
        return "```\nKeep every identifier, amount, error and warning verbatim; drop everything else.\n```"
    return json.dumps({"tool": "finish", "arguments": {"answer": "done"}})


def _compress(prompt: str, keep_fraction: float) -> str:
    blocks = {label: body for label, body in _FENCE.findall(prompt)}
    data = blocks.get("tool-output") or blocks.get("history") or ""
    lines = data.splitlines()
    keep = max(1, int(len(lines) * keep_fraction))
    return "\n".join(lines[:keep])


def _dspy_reply(system: str, user: str) -> str:
    match = _OUTPUT_FIELDS.search(system)
    fields = _FIELD.findall(match.group(1)) if match else []
    values = {
        "root_causes": "missing fact",
        "evidence": "A value the failing step needed was compressed away.",
        "remedy": "Keep every identifier and amount the task refers to, verbatim.",
        "new_history_instruction": "Summarize the earlier steps as bullets. Keep every identifier, amount, "
        "error and warning verbatim. Record completed writes with their ids.",
        "new_observation_instruction": "Keep the lines that mention identifiers, amounts, errors or warnings "
        "verbatim; drop the rest.",
        "policy_changes": "{}",
        "new_instruction": "Keep identifiers verbatim.",
    }
    blocks = [f"[[ ## {name} ## ]]\n{values.get(name, 'n/a')}" for name in fields]
    return "\n\n".join([*blocks, "[[ ## completed ## ]]"])
