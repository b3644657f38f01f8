"""One exporter per provider-native target: how a clear move and a summarize move are written there.

Each exporter writes into the export's `settings` and returns what the mapping loses; `None` from
`clear` means the target has no clearing at all. `instructions` says whether the target takes the
history compressor's text (the summary instructions). Warnings are values that cost the user natively;
every target flags a trigger by the one rule of `far_below`.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from optimizer.context.guideline import Guideline
from optimizer.context.moves import Clear, SummarizeOld
from optimizer.context.summary_template import summary_prompt

CONTEXT_EDITING = "langchain.agents.middleware.ContextEditingMiddleware"
CLEAR_TOOL_USES = "langchain.agents.middleware.ClearToolUsesEdit"
SUMMARIZATION = "langchain.agents.middleware.SummarizationMiddleware"
CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"  # clear_tool_uses_20250919
COMPACTION_BETA = "compact-2026-01-12"  # compact_20260112
# Anthropic's defaults (the SDK's docstrings).
CLEAR_DEFAULT_TRIGGER = 100_000
COMPACT_DEFAULT_TRIGGER = 150_000
# `ClearToolUsesEdit.trigger`'s default in langchain 1.5 (langchain/agents/middleware/context_editing.py),
# for when langchain (an optional extra) is not installed; `langchain_clear_default` reads the real one.
LANGCHAIN_CLEAR_DEFAULT_TRIGGER = 100_000


def far_below(trigger: int, default: int) -> bool:
    """A trigger a tenth of the default or less: learned on short tasks, it fires all the time on long ones."""
    return trigger * 10 <= default


@functools.cache
def langchain_clear_default() -> int:
    """The installed langchain's own `ClearToolUsesEdit` trigger, so the warning follows the package."""
    try:
        from langchain.agents.middleware import ClearToolUsesEdit
    except ImportError:
        return LANGCHAIN_CLEAR_DEFAULT_TRIGGER
    fields = dataclasses.fields(ClearToolUsesEdit) if dataclasses.is_dataclass(ClearToolUsesEdit) else ()
    default = {f.name: f.default for f in fields}.get("trigger")
    return default if isinstance(default, int) else LANGCHAIN_CLEAR_DEFAULT_TRIGGER


class Target:
    instructions = True  # the target takes the history compressor's text

    def clear(self, move: Clear, exclude: list[str], settings: dict[str, Any]) -> list[str] | None:
        return None

    def clear_warnings(self, move: Clear, where: str) -> list[str]:
        return []

    def summarize(self, move: SummarizeOld, guideline: Guideline, settings: dict[str, Any]) -> list[str]:
        raise NotImplementedError

    def summarize_warnings(self, move: SummarizeOld, where: str) -> list[str]:
        return []


class Anthropic(Target):
    def clear(self, move: Clear, exclude: list[str], settings: dict[str, Any]) -> list[str]:
        edit: dict[str, Any] = {
            "type": "clear_tool_uses_20250919",
            "trigger": {"type": "input_tokens", "value": move.trigger_tokens},
            "keep": {"type": "tool_uses", "value": move.keep_last},
        }
        if move.clear_at_least:
            edit["clear_at_least"] = {"type": "input_tokens", "value": move.clear_at_least}
        if exclude:
            edit["exclude_tools"] = exclude
        _add(settings, edit, CONTEXT_MANAGEMENT_BETA)
        return ["the trigger counts the whole input (system prompt and tools included), acon's the history only"]

    def clear_warnings(self, move: Clear, where: str) -> list[str]:
        out = []
        if move.trigger_tokens == 0:
            out.append(
                f"{where}: trigger 0 input tokens clears on every request past keep={move.keep_last} tool uses, "
                "so the cached prompt prefix is rewritten each turn "
                f"(Anthropic's default trigger: {CLEAR_DEFAULT_TRIGGER:,})"
            )
        elif far_below(move.trigger_tokens, CLEAR_DEFAULT_TRIGGER):
            out.append(
                f"{where}: trigger {move.trigger_tokens:,} input tokens is a tenth or less of Anthropic's default "
                f"{CLEAR_DEFAULT_TRIGGER:,}: clears (and cache rewrites) start early"
            )
        if not move.clear_at_least:
            out.append(
                f"{where}: no clear_at_least: a clear that frees a few tokens still rewrites the cached prefix "
                "(Anthropic recommends setting it)"
            )
        return out

    def summarize_warnings(self, move: SummarizeOld, where: str) -> list[str]:
        if not far_below(move.over, COMPACT_DEFAULT_TRIGGER):
            return []
        return [
            f"{where}: compaction trigger {move.over:,} input tokens is a tenth or less of Anthropic's default "
            f"{COMPACT_DEFAULT_TRIGGER:,}: the server summarizes (and pays for a summary) almost every request"
        ]

    def summarize(self, move: SummarizeOld, guideline: Guideline, settings: dict[str, Any]) -> list[str]:
        edit = {
            "type": "compact_20260112",
            "trigger": {"type": "input_tokens", "value": move.over},
            "instructions": guideline.history,
        }
        _add(settings, edit, COMPACTION_BETA)
        return [
            f"keep_last={move.keep_last} and max_tokens={move.max_tokens} have no counterpart: the server "
            "compacts everything before the trigger point, at its own length"
        ]


def _add(settings: dict[str, Any], edit: dict[str, Any], beta: str) -> None:
    """One edit into `context_management`, and the beta it needs into `betas` (once, in order)."""
    betas = settings.setdefault("betas", [])
    if beta not in betas:
        betas.append(beta)
    settings.setdefault("context_management", {"edits": []})["edits"].append(edit)


class OpenAIResponses(Target):
    """`client.responses.create(context_management=[{"type": "compaction", "compact_threshold": N}])`.

    The Responses API compacts server-side into an opaque item; it has no clearing edit and no field for
    summary instructions (checked against the installed SDK's `ContextManagement` type by the tests).
    """

    instructions = False

    def summarize(self, move: SummarizeOld, guideline: Guideline, settings: dict[str, Any]) -> list[str]:
        entries = settings.setdefault("context_management", [])
        if entries:  # one compaction entry per request: a second summarize move can only lower the threshold
            entries[0]["compact_threshold"] = min(entries[0]["compact_threshold"], move.over)
        else:
            entries.append({"type": "compaction", "compact_threshold": move.over})
        return [
            "the history compressor's text has no field: the server summarizes with its own instructions",
            f"keep_last={move.keep_last} and max_tokens={move.max_tokens} have no counterpart",
            "the compaction item is opaque (encrypted): replay it as is, nothing in it can be audited",
        ]

    def summarize_warnings(self, move: SummarizeOld, where: str) -> list[str]:
        if not far_below(move.over, COMPACT_DEFAULT_TRIGGER):
            return []
        return [
            f"{where}: compact_threshold {move.over:,} tokens: compaction (a paid summary, and a new prefix for "
            "the prompt cache) runs almost every request; OpenAI documents no default, Anthropic's is "
            f"{COMPACT_DEFAULT_TRIGGER:,}"
        ]


class LangChain(Target):
    def clear_warnings(self, move: Clear, where: str) -> list[str]:
        default = langchain_clear_default()
        if move.trigger_tokens == 0:
            return [
                f"{where}: trigger 0 tokens clears on every model call past keep={move.keep_last} tool uses, so "
                f"the provider's cached prompt prefix is rewritten each turn (LangChain's default trigger: {default:,})"
            ]
        if far_below(move.trigger_tokens, default):
            return [
                f"{where}: trigger {move.trigger_tokens:,} tokens is a tenth or less of LangChain's default "
                f"{default:,}: once past it, ClearToolUsesEdit clears every few turns, and each clear rewrites "
                "the provider's cached prompt prefix"
            ]
        return []

    def summarize_warnings(self, move: SummarizeOld, where: str) -> list[str]:
        # SummarizationMiddleware's own trigger defaults to None (it never summarizes), so there is no LangChain
        # default to measure against: Anthropic's compaction default stands in for a model's working context.
        if not far_below(move.over, COMPACT_DEFAULT_TRIGGER):
            return []
        return [
            f'{where}: trigger ["tokens", {move.over:,}]: a paid summary (and a new cached prompt prefix) almost '
            "every model call; SummarizationMiddleware has no default trigger, and this is a tenth or less of "
            f"Anthropic's compaction default {COMPACT_DEFAULT_TRIGGER:,}"
        ]

    def clear(self, move: Clear, exclude: list[str], settings: dict[str, Any]) -> list[str]:
        kwargs: dict[str, Any] = {
            "trigger": move.trigger_tokens,
            "keep": move.keep_last,
            "clear_at_least": move.clear_at_least,
        }
        if exclude:
            kwargs["exclude_tools"] = exclude
        middleware = settings.setdefault("middleware", [])
        editing = next((m for m in middleware if m["class"] == CONTEXT_EDITING), None)
        if editing is None:
            editing = {"class": CONTEXT_EDITING, "kwargs": {"edits": []}}
            middleware.append(editing)
        editing["kwargs"]["edits"].append({"class": CLEAR_TOOL_USES, "kwargs": kwargs})
        return ["tokens are LangChain's approximate count, not the model's tokenizer"]

    def summarize(self, move: SummarizeOld, guideline: Guideline, settings: dict[str, Any]) -> list[str]:
        kwargs = {
            "model": None,
            "trigger": ["tokens", move.over],
            "keep": ["messages", 2 * move.keep_last],
            "summary_prompt": summary_prompt(guideline.history),
        }
        settings.setdefault("middleware", []).append({"class": SUMMARIZATION, "kwargs": kwargs})
        return [
            "model is null: middleware_from(export, model=...) sets the summarization model",
            f"keep_last={move.keep_last} steps became "
            f"{2 * move.keep_last} messages (a step with parallel calls has more)",
            f"max_tokens={move.max_tokens} is the summarization model's own setting",
        ]
