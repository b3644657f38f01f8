"""The product path on the real embedded model (installed by `acon setup`)."""

from __future__ import annotations

import pytest

from optimizer.agent.llm import LlmAgent
from optimizer.agent.loop import EpisodeServices, run_episode
from optimizer.context.strategies import parse_strategy
from optimizer.evaluate.endpoints import ModelEndpoints
from optimizer.llm import EndpointConfig
from optimizer.world.suite import load_suite

pytestmark = pytest.mark.llm


def test_real_local_model_completes_a_task_with_reported_usage():
    with ModelEndpoints({"agent": EndpointConfig()}) as endpoints:
        client = endpoints.client("agent")
        task = load_suite("smoke").task("smoke-status")
        services = EpisodeServices(system_tokens=client.system_tokens)
        episode = run_episode(task, LlmAgent(client, native=False), parse_strategy("none"), services)
    assert episode.outcome == "success", (episode.reasons, [s.action["raw"] for s in episode.steps])
    assert episode.token_source == "reported"
    assert 0 < episode.metrics["peak_tokens"] < episode.steps[-1].usage["prompt_tokens"]
