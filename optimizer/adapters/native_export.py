"""A guideline as provider-native settings, where it maps: Anthropic context editing, LangChain middleware.

Only part of a guideline has a native counterpart. Clearing old tool results maps onto Anthropic's
`clear_tool_uses_20250919` edit and LangChain's `ClearToolUsesEdit`; history summarization onto
Anthropic's `compact_20260112` edit and LangChain's `SummarizationMiddleware`. Nothing native runs at
write time (extraction, offloading, observation compression), nothing keeps a recall handle, and
retention classes become tool names only through a retention map. Every policy entry therefore gets a
verdict (`mapped`, `lossy` with what is lost, or `not_mapped` with why): a lossy export is never silent.
The full guideline runs only through `optimizer.runtime` (or its adapters).

The Anthropic settings are the keyword arguments of `client.beta.messages.create` as they stand
(`betas` and `context_management`), to pass beside `model`, `max_tokens` and `messages`. Values that
cost the user money natively are warned about: a clearing trigger that rewrites the cached prefix every
turn, triggers far below the provider's defaults (a guideline learned on short tasks carries short ones).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from optimizer.context.contract import Action, contract_for
from optimizer.context.guideline import Guideline
from optimizer.context.moves import Clear, SummarizeOld
from optimizer.runtime.retention_map import ToolRetention
from optimizer.world.retention import RetentionClass

NativeFormat = Literal["anthropic", "langchain"]
FORMATS: tuple[NativeFormat, ...] = ("anthropic", "langchain")

CONTEXT_EDITING = "langchain.agents.middleware.ContextEditingMiddleware"
CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"  # clear_tool_uses_20250919
COMPACTION_BETA = "compact-2026-01-12"  # compact_20260112
# Anthropic's defaults (the SDK's docstrings): a trigger a tenth of these or less is flagged.
CLEAR_DEFAULT_TRIGGER = 100_000
COMPACT_DEFAULT_TRIGGER = 150_000
NO_WRITE_HOOK = "no native write-time stage: the result enters the context verbatim"
NO_RECALL = "cleared results are gone for good: no recall handle, no recall tool"


@dataclass(frozen=True)
class Verdict:
    """What became of one policy entry (`write[0]`, `history[1]`, `pinned`, `budget_tokens`)."""

    entry: str
    status: Literal["mapped", "lossy", "not_mapped"]
    note: str


@dataclass
class NativeExport:
    format: NativeFormat
    guideline: str
    settings: dict[str, Any]
    verdicts: list[Verdict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # values that cost the user, each one line

    @property
    def lossy(self) -> bool:
        return any(v.status != "mapped" for v in self.verdicts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "guideline": self.guideline,
            "settings": self.settings,
            "entries": [asdict(v) for v in self.verdicts],
            "warnings": list(self.warnings),
        }


def export_native(
    guideline: Guideline, fmt: NativeFormat, retention: Mapping[str, ToolRetention] | None = None
) -> NativeExport:
    """`guideline`'s native settings for `fmt`; `retention` (tool -> metadata) turns classes into tool names."""
    exporter = _Anthropic() if fmt == "anthropic" else _LangChain()
    result = NativeExport(fmt, f"{guideline.name}@{guideline.version}", {})
    policy = guideline.policy
    excluded = _excluded_tools(guideline, retention)
    for index, write_move in enumerate(policy.write):
        result.verdicts.append(Verdict(f"write[{index}] {write_move.move}", "not_mapped", NO_WRITE_HOOK))
    for index, move in enumerate(policy.history):
        where = f"history[{index}] {move.move}"
        if isinstance(move, Clear):
            losses = [NO_RECALL, *exporter.clear(move, excluded(move), result.settings)]
            result.warnings += exporter.clear_warnings(move, where)
            if move.over:
                losses.append(f"size floor over={move.over} has no native counterpart: small results are cleared too")
            if retention is None:
                losses.append(
                    "no retention map: classes cannot become exclude_tools, every tool's results are "
                    "clearable (pass --retention)"
                )
            result.verdicts.append(Verdict(where, "lossy", "; ".join(losses)))
        elif isinstance(move, SummarizeOld):
            losses = exporter.summarize(move, guideline, result.settings)
            result.warnings += exporter.summarize_warnings(move, where)
            losses.append(
                "the summary covers every class, pinned skills and receipts included (the contract pins "
                "them verbatim outside any summary)"
            )
            if move.index:
                losses.append("index=true: the summary cannot name recall handles")
            result.verdicts.append(Verdict(where, "lossy", "; ".join(losses)))
        else:
            result.verdicts.append(Verdict(where, "not_mapped", f"no native {move.move!r} edit"))
    moves = {m.move for m in policy.history}
    if policy.pinned:
        names = ", ".join(c.value for c in policy.pinned)
        if "summarize" in moves:
            result.verdicts.append(Verdict("pinned", "lossy", f"{names}: a native summary condenses them too"))
        elif "clear" in moves:
            result.verdicts.append(
                Verdict(
                    "pinned",
                    "lossy",
                    f"{names}: excluded from clearing by tool name, only for the tools the retention map names",
                )
            )
        else:
            result.verdicts.append(Verdict("pinned", "mapped", f"{names}: nothing exported cuts them"))
    if "clear" in moves:
        result.verdicts.append(
            Verdict(
                "unlisted tools",
                "lossy",
                "results of tools the retention map does not name are clearable natively; acon keeps unknown results",
            )
        )
    if policy.budget_tokens is not None:
        result.verdicts.append(
            Verdict("budget_tokens", "not_mapped", f"no native pre-send budget ({policy.budget_tokens} tokens)")
        )
    return result


def _excluded_tools(guideline: Guideline, retention: Mapping[str, ToolRetention] | None):
    """Per clear move: the tools whose results it must not clear (pinned, outside its classes, or barred)."""
    pinned = set(guideline.policy.pinned)
    tools = dict(retention or {})

    def excluded(move: Clear) -> list[str]:
        out = []
        for name, meta in sorted(tools.items()):
            # A write's successful result is a receipt; errors are recognised at run time, not by name.
            cls = RetentionClass.WRITE_RECEIPT if meta.side_effect else meta.retention_class
            clearable = move.applies_to(cls, tuple(pinned)) and Action.CLEAR in contract_for(cls).allowed
            if cls in pinned or not clearable:
                out.append(name)
        return out

    return excluded


class _Anthropic:
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
        elif move.trigger_tokens * 10 <= CLEAR_DEFAULT_TRIGGER:
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
        if move.over * 10 > COMPACT_DEFAULT_TRIGGER:
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


class _LangChain:
    def clear_warnings(self, move: Clear, where: str) -> list[str]:
        if move.trigger_tokens == 0:
            return [
                f"{where}: trigger 0 tokens clears on every model call past keep={move.keep_last} tool uses, so "
                "the provider's cached prompt prefix is rewritten each turn (LangChain's default trigger: 100,000)"
            ]
        return []

    def summarize_warnings(self, move: SummarizeOld, where: str) -> list[str]:
        return []

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
        editing["kwargs"]["edits"].append({"class": "langchain.agents.middleware.ClearToolUsesEdit", "kwargs": kwargs})
        return ["tokens are LangChain's approximate count, not the model's tokenizer"]

    def summarize(self, move: SummarizeOld, guideline: Guideline, settings: dict[str, Any]) -> list[str]:
        prompt = guideline.history.replace("{", "{{").replace("}", "}}")
        kwargs = {
            "model": None,
            "trigger": ["tokens", move.over],
            "keep": ["messages", 2 * move.keep_last],
            "summary_prompt": f"{prompt}\n\n<messages>\nMessages to summarize:\n{{messages}}\n</messages>",
        }
        settings.setdefault("middleware", []).append(
            {"class": "langchain.agents.middleware.SummarizationMiddleware", "kwargs": kwargs}
        )
        return [
            "model is null: set the summarization model",
            f"keep_last={move.keep_last} steps became "
            f"{2 * move.keep_last} messages (a step with parallel calls has more)",
            f"max_tokens={move.max_tokens} is the summarization model's own setting",
        ]
