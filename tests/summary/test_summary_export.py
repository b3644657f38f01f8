"""The learned text drops into each target unchanged, checked against the installed packages."""

from __future__ import annotations

import pytest
from anthropic.types.beta import BetaCompact20260112EditParam, BetaContextManagementConfigParam
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from pydantic import TypeAdapter, ValidationError

from optimizer.errors import ConfigError
from optimizer.summary.anthropic_target import AnthropicCompaction
from optimizer.summary.contract_text import closing_part, with_contract
from optimizer.summary.export import export_target
from optimizer.summary.langchain_target import LangChainSummary

TEXT = with_contract("Keep every identifier {as written}.")


@pytest.mark.parametrize("text", [TEXT, with_contract(TEXT, "Copy every {rule} line word for word.")])
def test_the_langchain_export_builds_the_middleware_that_ran(text):
    target = LangChainSummary(trigger_tokens=1500, keep_messages=6, instructions=text)
    kwargs = dict(export_target(target).settings["middleware"][-1]["kwargs"])
    kwargs["model"] = FakeListChatModel(responses=["s"])
    kwargs["trigger"], kwargs["keep"] = tuple(kwargs["trigger"]), tuple(kwargs["keep"])
    exported = SummarizationMiddleware(**kwargs)
    ran = target.middleware(lambda messages: "s")
    assert exported.summary_prompt == ran.summary_prompt
    assert exported.summary_prompt.format(messages="M").startswith("Keep every identifier {as written}.")
    assert exported.keep == ran.keep and exported.trigger == ran.trigger
    # A text with a closing part ends with it, after the conversation, exactly as it ran.
    closing = closing_part(text)
    assert exported.summary_prompt.format(messages="M").endswith(
        f"</messages>\n\n{closing}" if closing else "</messages>"
    )


def test_an_odd_keep_that_the_export_cannot_carry_is_refused():
    with pytest.raises(ConfigError, match="would not run what was measured"):
        export_target(LangChainSummary(trigger_tokens=1500, keep_messages=5, instructions=TEXT))


def test_the_anthropic_export_is_a_valid_request_field_with_the_text_as_instructions():
    settings = export_target(AnthropicCompaction(trigger_tokens=60_000, instructions=TEXT)).settings
    # `edits` is an Iterable in the SDK's types, validated lazily: the edit is checked on its own type.
    TypeAdapter(BetaContextManagementConfigParam).validate_python(settings["context_management"])
    edit = settings["context_management"]["edits"][0]
    assert TypeAdapter(BetaCompact20260112EditParam).validate_python(edit) == edit
    with pytest.raises(ValidationError):
        TypeAdapter(BetaCompact20260112EditParam).validate_python({**edit, "trigger": {"type": "input_tokens"}})
    assert edit["type"] == "compact_20260112" and edit["instructions"] == TEXT
    assert edit["trigger"] == {"type": "input_tokens", "value": 60_000}
    assert "compact-2026-01-12" in settings["betas"]
