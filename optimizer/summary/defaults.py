"""What each target uses when the user gives it no instructions, read from the installed package at run time.

acon never keeps a copy of a target's default text: a copy would drift from what the user's installed
version sends, and the baseline would then measure something nobody runs. LangChain ships its default
summary prompt in the package; Anthropic's compaction prompt lives on the server, and the installed SDK
exposes only the field's description and the default trigger, so that default cannot be measured locally.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class TargetDefault:
    """A target's default summary instructions, or why they are not available here."""

    target: str
    text: str | None
    source: str  # where the text (or the reason for its absence) was read
    note: str = ""


def langchain_default() -> TargetDefault:
    """`SummarizationMiddleware`'s default `summary_prompt` from the installed `langchain`."""
    import langchain
    from langchain.agents.middleware import summarization

    text = summarization.DEFAULT_SUMMARY_PROMPT
    return TargetDefault(
        "langchain",
        text,
        f"langchain {langchain.__version__}: langchain.agents.middleware.summarization.DEFAULT_SUMMARY_PROMPT",
    )


def anthropic_default() -> TargetDefault:
    """Compaction's default instructions: server-side. The SDK's own description of the field is returned as
    the note, so a reader sees that user text is *added* to a prompt the server keeps."""
    import anthropic
    from anthropic.types.beta import beta_compact_20260112_edit_param as param

    source = inspect.getsource(param)
    described = re.search(r"instructions: Optional\[str\]\s+\"\"\"(.*?)\"\"\"", source, re.DOTALL)
    note = described.group(1).strip() if described else "the installed SDK does not describe `instructions`"
    return TargetDefault(
        "anthropic",
        None,
        f"anthropic {anthropic.__version__}: anthropic.types.beta.BetaCompact20260112EditParam",
        f"server-side only; the SDK says of `instructions`: {note!r}",
    )


def anthropic_default_trigger() -> int | None:
    """The default compaction trigger in input tokens, as the installed SDK documents it."""
    from anthropic.types.beta import beta_compact_20260112_edit_param as param

    found = re.search(r"Defaults to ([\d,_]+) input tokens", inspect.getsource(param))
    return int(re.sub(r"[,_]", "", found.group(1))) if found else None


DEFAULTS = {"langchain": langchain_default, "anthropic": anthropic_default}


def target_default(target: str) -> TargetDefault:
    return DEFAULTS[target]()
