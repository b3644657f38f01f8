"""A guideline as provider-native settings, where it maps: Anthropic context editing, OpenAI Responses
compaction, LangChain middleware.

Only part of a guideline has a native counterpart. Clearing old tool results maps onto Anthropic's
`clear_tool_uses_20250919` edit and LangChain's `ClearToolUsesEdit`; history summarization onto
Anthropic's `compact_20260112` edit, the Responses API's `compaction` entry and LangChain's
`SummarizationMiddleware`. Nothing native runs at
write time (extraction, offloading, observation compression), nothing keeps a recall handle, and
retention classes become tool names only through a retention map. Every policy entry therefore gets a
verdict (`mapped`, `lossy` with what is lost, or `not_mapped` with why), and so does each compressor text
(used by no move, or used by a move with no native stage, it is exported nowhere): a lossy export is never
silent.
The full guideline runs only through `optimizer.runtime` (or its adapters).

The Anthropic settings are the keyword arguments of `client.beta.messages.create` as they stand
(`betas` and `context_management`), to pass beside `model`, `max_tokens` and `messages`; the OpenAI ones
those of `client.responses.create` (`context_management`). The LangChain ones are built into middleware
objects by `optimizer.adapters.langchain.middleware_from`. Values that
cost the user money natively are warned about: a clearing trigger that rewrites the cached prefix every
turn, triggers far below the provider's defaults (a guideline learned on short tasks carries short ones).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from optimizer.adapters.native_targets import Anthropic, LangChain, OpenAIResponses, Target
from optimizer.context.contract import Action, contract_for
from optimizer.context.guideline import Guideline
from optimizer.context.moves import Clear, Compress, SummarizeOld
from optimizer.runtime.retention_map import ToolRetention
from optimizer.world.retention import RetentionClass

NativeFormat = Literal["anthropic", "openai", "langchain"]
FORMATS: tuple[NativeFormat, ...] = ("anthropic", "openai", "langchain")
TARGETS: dict[NativeFormat, type[Target]] = {"anthropic": Anthropic, "openai": OpenAIResponses, "langchain": LangChain}
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
    exporter = TARGETS[fmt]()
    result = NativeExport(fmt, f"{guideline.name}@{guideline.version}", {})
    policy = guideline.policy
    excluded = _excluded_tools(guideline, retention)
    for index, write_move in enumerate(policy.write):
        result.verdicts.append(Verdict(f"write[{index}] {write_move.move}", "not_mapped", NO_WRITE_HOOK))
    for index, move in enumerate(policy.history):
        where = f"history[{index}] {move.move}"
        if isinstance(move, Clear):
            mapped = exporter.clear(move, excluded(move), result.settings)
            if mapped is None:
                result.verdicts.append(Verdict(where, "not_mapped", f"no native clearing in {fmt}"))
                continue
            losses = [NO_RECALL, *mapped]
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
    clears = "clear" in moves and fmt != "openai"
    if policy.pinned:
        names = ", ".join(c.value for c in policy.pinned)
        if "summarize" in moves:
            result.verdicts.append(Verdict("pinned", "lossy", f"{names}: a native summary condenses them too"))
        elif clears:
            result.verdicts.append(
                Verdict(
                    "pinned",
                    "lossy",
                    f"{names}: excluded from clearing by tool name, only for the tools the retention map names",
                )
            )
        else:
            result.verdicts.append(Verdict("pinned", "mapped", f"{names}: nothing exported cuts them"))
    if clears:
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
    result.verdicts += _text_verdicts(guideline, exporter)
    return result


def _text_verdicts(guideline: Guideline, exporter: Target) -> list[Verdict]:
    """Where each compressor text went: text no exported setting carries is a loss, said with its size."""
    policy = guideline.policy
    summarize = [f"history[{i}]" for i, m in enumerate(policy.history) if isinstance(m, SummarizeOld)]
    compress = [f"write[{i}]" for i, m in enumerate(policy.write) if isinstance(m, Compress)]
    out = []
    for entry, text, users, native, why in (
        ("history text", guideline.history, summarize, exporter.instructions, "takes no instructions natively"),
        ("observation text", guideline.observation, compress, False, "has no native write-time stage"),
    ):
        if not text.strip():
            continue
        size = f"{len(text.split()):,} words"
        if not users:
            note = f"{size} that no move of the policy uses (acon's runtime never sends it either): exported nowhere"
            out.append(Verdict(entry, "not_mapped", note))
        elif native:
            out.append(Verdict(entry, "mapped", f"{size}: the instructions of {', '.join(users)}"))
        else:
            note = f"{size} used by {', '.join(users)}, which {why}: exported nowhere"
            out.append(Verdict(entry, "not_mapped", note))
    return out


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
