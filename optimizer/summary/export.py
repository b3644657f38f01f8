"""A target's learned text in the target's own form, through acon's exporters.

The target's nearest acon policy (one `summarize` move with its trigger and keep) and its text become a
guideline, and `export_native` writes the settings: for LangChain a `SummarizationMiddleware(...)` whose
`summary_prompt` is exactly the template the strategy ran (checked here, so what was measured is what
ships), for Anthropic the `compact_20260112` edit with the text as `instructions`.
"""

from __future__ import annotations

from typing import Any

from optimizer.adapters.native_export import NativeExport, export_native
from optimizer.context.guideline import SEED_GUIDELINE, Guideline, guideline_at
from optimizer.context.summary_template import summary_prompt
from optimizer.errors import ConfigError
from optimizer.summary.langchain_target import LangChainSummary
from optimizer.summary.target_base import SummaryTarget


def target_guideline(target: SummaryTarget, provenance: dict[str, Any] | None = None) -> Guideline:
    """The target's nearest acon policy with its text as the history instructions: the learned artifact."""
    text = target.instruction_text()
    if not text.strip():
        raise ConfigError(f"{target.type}: no instructions to export (the target's default needs no setting)")
    # A summary target has no observation compressor; the guideline format wants one, which no export reads.
    return Guideline(
        name=target.type,
        description=f"Summary instructions learned for the {target.target} target.",
        policy=target.policy(),
        history=text,
        observation=guideline_at(SEED_GUIDELINE).observation,
        provenance=provenance or {},
    )


def export_target(target: SummaryTarget) -> NativeExport:
    guideline = target_guideline(target)
    result = export_native(guideline, "langchain" if isinstance(target, LangChainSummary) else "anthropic")
    if isinstance(target, LangChainSummary):
        kwargs = result.settings["middleware"][-1]["kwargs"]
        ran = summary_prompt(target.instruction_text())
        if kwargs["summary_prompt"] != ran or kwargs["keep"] != ["messages", target.keep_messages]:
            raise ConfigError(
                "the LangChain export would not run what was measured: "
                f"keep {kwargs['keep']} vs {target.keep_messages} messages, or a different summary_prompt"
            )
    return result
