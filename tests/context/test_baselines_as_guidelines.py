"""One action space contains every baseline: each fixed strategy, translated into a guideline
(`as_guideline`), sends the same request at every step as the strategy itself, on built-in and BFCL tasks.

The LLM baselines run against a deterministic scripted compressor, so both sides see the same replies.
Each configuration is chosen so that its move fires on these tasks (checked), or the test would be
vacuous.
"""

from __future__ import annotations

import hashlib

import pytest

from optimizer.agent.loop import EpisodeServices, run_episode
from optimizer.agent.reference import ReferenceAgent
from optimizer.context.compressor import Compressor
from optimizer.context.guideline import SEED_GUIDELINE, read_guideline
from optimizer.context.strategies import (
    DETERMINISTIC,
    LLM_BASELINES,
    GuidelineStrategy,
    parse_strategy,
)
from optimizer.context.strategies.base import ContextStrategy
from tasks import SuiteConfig
from tasks.bfcl import install
from tests.context.conftest import stub_client

BASELINES = [
    {"type": "fifo", "keep_last": 2},
    {"type": "mask_last_n", "n": 1, "polling": 2},
    {"type": "mask_last_n", "n": 2, "keep_first": False, "recoverable": True},
    {"type": "clear_tool_uses", "trigger_tokens": 1500, "keep_last": 1, "clear_at_least": 100},
    {"type": "clear_tool_uses", "trigger_tokens": 800, "keep_last": 0, "exclude_tools": ["get_order", "ls"]},
    {"type": "offload_preview", "max_tokens": 300, "head_tokens": 50, "tail_tokens": 20},
    {"type": "offload_preview"},
    {"type": "llm_history", "t_hist": 600, "keep_last": 1, "max_tokens": 64},
    {"type": "llm_history", "t_hist": 900, "keep_last": 2, "pinned": ["skill", "write_receipt"]},
    {"type": "llm_observation", "t_obs": 400, "max_tokens": 48},
]


def test_every_fixed_baseline_is_covered():
    assert {c["type"] for c in BASELINES} == set(DETERMINISTIC) - {"none"} | set(LLM_BASELINES)


def scripted_compression(request: dict) -> str:
    prompt = request["messages"][-1]["content"]
    return f"NOTES {hashlib.sha256(prompt.encode()).hexdigest()[:8]}: {prompt[-120:]}"


def tasks_of(suite: dict, count: int):
    from pydantic import TypeAdapter

    return TypeAdapter(SuiteConfig).validate_python(suite).load().split("test")[:count]


SUITES = [
    pytest.param({"type": "builtin"}, 10, id="builtin"),
    pytest.param(
        {"type": "bfcl", "category": "multi_turn_long_context"},
        16,
        id="bfcl_long_context",
        marks=pytest.mark.skipif(not install.ready(), reason="bfcl-eval not installed (acon setup)"),
    ),
]


def requests(task, strategy: ContextStrategy, compressor: Compressor) -> tuple[list[list[tuple[str, str]]], str, int]:
    episode = run_episode(task, ReferenceAgent(task.reference), strategy, EpisodeServices(compressor=compressor))
    sent = [[(m["role"], episode.text(m["text"])) for m in step.request] for step in episode.steps]
    return sent, episode.outcome, len(episode.records)


@pytest.mark.parametrize(("suite", "count"), SUITES)
@pytest.mark.parametrize("config", BASELINES, ids=lambda c: "-".join(f"{v}" for v in c.values()))
def test_the_guideline_translation_sends_the_same_requests(stub, suite, count, config):
    compressor = Compressor(stub_client(stub(scripted_compression).base_url))
    baseline = parse_strategy(config)
    # The plain-ACON baselines leave skills to the summary: studied here as they are.
    translated = GuidelineStrategy(guideline=baseline.as_guideline(read_guideline(SEED_GUIDELINE)), allow_unpinned=True)
    assert translated.offers_recall == baseline.offers_recall
    assert translated.uses_compressor == baseline.uses_compressor
    fired = 0
    for task in tasks_of(suite, count):
        expected, outcome, records = requests(task, baseline, compressor)
        got, translated_outcome, _ = requests(task, translated, compressor)
        assert len(got) == len(expected), task.id
        for step, (a, b) in enumerate(zip(expected, got, strict=True)):
            assert a == b, f"{task.id}: step {step} differs"
        assert translated_outcome == outcome
        fired += records
    if suite["type"] == "builtin" or config["type"] not in ("fifo", "mask_last_n"):
        assert fired > 0, f"{config} never compressed anything on these tasks"
