"""The agent loop and a user's runtime fed the same conversation as OpenAI messages send the same requests.

The loop drives the runtime step by step; a user hands it the whole conversation, raw tool results
included, before every request. For every built-in and BFCL test task (tier 0, the reference agent)
under the seed and each learned guideline, a fresh runtime fed the loop's conversation message by message
must rebuild every request the loop sent, byte for byte (role and text of every message).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from optimizer.agent.conversation import conversation_before
from optimizer.agent.loop import EpisodeServices, _message_text, run_episode
from optimizer.agent.reference import ReferenceAgent
from optimizer.context.compressor import Compressor
from optimizer.context.strategies import GuidelineStrategy
from optimizer.llm.client import ChatClient
from optimizer.llm.endpoint import EndpointConfig
from optimizer.runtime import ContextRuntime, RetentionMap
from optimizer.testing.scripted import scripted_models
from optimizer.testing.stub_server import StubServer
from optimizer.world.suite import load_suite
from optimizer.world.task import Task
from tasks.bfcl import install
from tests.conftest import ROOT

LEARNED = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "guidelines" / "learned").glob("*.md"))
GUIDELINES = ["guidelines/seed/seed.md", *LEARNED]
# BFCL's base and missing-function/parameter tasks have short results that no guideline here cuts.
CUT_SUITES = {"builtin", "bfcl_long_context"}
SUITES = ["builtin", "bfcl_base", "bfcl_long_context", "bfcl_miss_func", "bfcl_miss_param"]


@pytest.fixture(scope="module")
def compressor():
    with StubServer(scripted_models) as url:
        config = EndpointConfig(base_url=url, model="scripted", backoff_s=0.0)
        yield Compressor(ChatClient(config, base_url=url, model="scripted"))


def tool_specs(task: Task) -> RetentionMap:
    env = task.make_env()
    try:
        return RetentionMap.from_specs(spec for turn in range(len(task.turns)) for spec in env.tools(turn))
    finally:
        env.close()


def assert_runtime_rebuilds_the_loop(task: Task, guideline: str, compressor: Compressor) -> int:
    strategy = GuidelineStrategy(guideline=guideline)
    episode = run_episode(task, ReferenceAgent(task.reference), strategy, EpisodeServices(compressor=compressor))
    assert episode.outcome != "infra_error", episode.error
    runtime = ContextRuntime(guideline, retention=tool_specs(task), compressor=compressor)
    for step in episode.steps:
        system = {"role": "system", "content": episode.text(step.request[0]["text"])}
        sent = runtime.compact([system, *conversation_before(episode, step.step)], tool_format="json")
        rebuilt = [{"role": m["role"], "text": episode.store(_message_text(m))} for m in sent]
        assert rebuilt == step.request, f"{task.id} under {guideline}: step {step.step} differs"
    assert runtime.stats.requests == len(episode.steps)
    return runtime.stats.compressions


@pytest.mark.parametrize("suite_name", SUITES)
def test_runtime_sends_what_the_loop_sends_on_every_test_task(suite_name, compressor):
    if suite_name.startswith("bfcl") and not install.ready():
        pytest.skip("bfcl-eval not installed (acon setup)")
    suite = load_suite(suite_name)
    compressions = 0
    for guideline in GUIDELINES:
        assert Path(ROOT / guideline).exists()
        for task_id in suite.test_ids:
            compressions += assert_runtime_rebuilds_the_loop(suite.task(task_id), guideline, compressor)
    if suite_name in CUT_SUITES:  # results long enough that the guidelines cut: not all requests are verbatim
        assert compressions > 0
