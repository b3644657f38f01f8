"""The summarizer targets: LangChain's installed middleware decides, Anthropic's compaction folds all."""

from __future__ import annotations

import pytest
from langchain.agents.middleware import summarization
from pydantic import ValidationError

from optimizer.context.strategies.base import ContextStrategy
from optimizer.context.summary_template import summary_prompt
from optimizer.summary.anthropic_target import AnthropicCompaction
from optimizer.summary.defaults import anthropic_default, anthropic_default_trigger, langchain_default
from optimizer.summary.langchain_target import LangChainSummary
from tests.context.conftest import TASK, compressor_for, run  # noqa: F401 - fixture

SUMMARY = "Summary: skill RULE-MID-02 applies; order ORD-5521 created."


def _reply(request: dict) -> str:
    return SUMMARY


def test_the_langchain_default_is_read_from_the_installed_package():
    default = langchain_default()
    assert default.text is summarization.DEFAULT_SUMMARY_PROMPT
    assert LangChainSummary(trigger_tokens=100, keep_messages=4).instruction_text() == default.text


def test_the_anthropic_default_is_said_to_be_server_side():
    default = anthropic_default()
    assert default.text is None and "server-side" in default.note
    assert anthropic_default_trigger() == 150_000


def test_free_text_becomes_a_template_langchain_formats():
    prompt = summary_prompt("Keep ids like {ORD-1}.")
    assert prompt.format(messages="M").startswith("Keep ids like {ORD-1}.")
    assert prompt.format(messages="M").rstrip().endswith("M\n</messages>")


def test_invalid_config_is_rejected():
    with pytest.raises(ValidationError):
        LangChainSummary(trigger_tokens=0, keep_messages=4)
    with pytest.raises(ValidationError):
        AnthropicCompaction(trigger_tokens=100, keep=3)


def test_the_version_follows_the_text():
    a = LangChainSummary(trigger_tokens=800, keep_messages=4, instructions="Keep ids.")
    b = a.model_copy(update={"instructions": "Keep errors."})
    assert a.version() != b.version()
    assert isinstance(a, ContextStrategy)


def test_langchain_summarizes_all_but_the_last_messages_with_its_own_prompt(compressor_for):  # noqa: F811
    compressor, server = compressor_for(_reply)
    strategy = LangChainSummary(trigger_tokens=1500, keep_messages=4, instructions="Keep every id.")
    result = run(strategy, compressor=compressor)
    summaries = [r for r in result.episode.records if r.action == "summarize"]
    assert summaries and server.requests
    first = server.requests[0]["messages"]
    # LangChain sends its assembled prompt as one user message, acon's compressor layout nowhere.
    assert [m["role"] for m in first] == ["user"]
    assert first[0]["content"].startswith("Keep every id.") and "<messages>" in first[0]["content"]
    assert "# Compression guideline" not in first[0]["content"]
    # The agent sees LangChain's summary message, after the task it keeps verbatim.
    last = result.sent[-1]
    assert TASK in last[0]["content"] or TASK in last[1]["content"]
    assert any(
        SUMMARY in str(m.get("content")) and "summary of the conversation" in str(m.get("content")) for m in last
    )
    # Every call in the request still has its result next to it.
    from tests.context.conftest import unpaired_calls

    assert all(not unpaired_calls(request) for request in result.sent)


def test_anthropic_folds_the_whole_prefix_with_the_instructions_last(compressor_for):  # noqa: F811
    compressor, server = compressor_for(_reply)
    strategy = AnthropicCompaction(trigger_tokens=1500, instructions="Keep every receipt id.")
    result = run(strategy, compressor=compressor)
    assert server.requests
    prompt = server.requests[0]["messages"][-1]["content"]
    assert prompt.rstrip().endswith("Keep every receipt id.")
    after = result.episode.records[0]
    assert after.action == "summarize" and after.tokens_after < after.tokens_before


def test_a_repeated_history_is_never_summarized_twice(compressor_for, tmp_path):  # noqa: F811
    from optimizer.context.compressor import Compressor
    from optimizer.llm.cache import ResponseCache

    base, server = compressor_for(_reply)
    cached = Compressor(base.client, ResponseCache(tmp_path / "c.sqlite"))
    strategy = LangChainSummary(trigger_tokens=1500, keep_messages=4, instructions="Keep every id.")
    run(strategy, compressor=cached)
    calls = len(server.requests)
    run(strategy, compressor=Compressor(base.client, ResponseCache(tmp_path / "c.sqlite")))
    assert calls > 0 and len(server.requests) == calls


def test_a_summary_an_unfinished_attempt_fetched_is_that_episodes_own_call(compressor_for, tmp_path):  # noqa: F811
    """The summary call shares the compressor's reply cache and its origin accounting: an episode redone after
    a kill owns the summary its first attempt fetched; another episode reads it as a cache hit."""
    from optimizer.context.compressor import Compressor
    from optimizer.llm.cache import ResponseCache
    from optimizer.summary.call import call_summarizer

    base, server = compressor_for(_reply)
    cached = Compressor(base.client, ResponseCache(tmp_path / "c.sqlite"))
    messages = [{"role": "user", "content": "Summarize: ORD-5521 created."}]
    with cached.attempt("task-1"):
        first = call_summarizer(cached, messages, 100)
    with cached.attempt("task-1"):
        redone = call_summarizer(cached, messages, 100)
    with cached.attempt("task-2"):
        other = call_summarizer(cached, messages, 100)
    assert len(server.requests) == 1 and first.text == SUMMARY
    assert (first.cached, redone.cached, other.cached) == (False, False, True)
    assert cached.calls == 2 and cached.cache_hits == 1
