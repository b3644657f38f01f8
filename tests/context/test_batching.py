"""The policy's batching knob: history moves apply only when enough goes at once, so the prefix is rebuilt rarely."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from optimizer.agent.episode import Episode
from optimizer.agent.loop import EpisodeServices, run_episode
from optimizer.agent.reference import ReferenceAgent
from optimizer.context.guideline import SEED_GUIDELINE, Guideline, read_guideline
from optimizer.context.policy import RetentionPolicy
from optimizer.context.strategies import GuidelineStrategy
from optimizer.world.sources import need_sources
from optimizer.world.suite import load_suite
from tests.context.conftest import run as run_context

SEED = read_guideline(SEED_GUIDELINE)
# Clear volatile results early and mask old steps: model-free moves that edit the history often.
MOVES = {
    "history": [
        {"move": "clear", "classes": ["error_partial", "dynamic_state"], "trigger_tokens": 1440, "keep_last": 1},
        {"move": "mask", "keep_last": 2, "recoverable": True, "over": 128},
    ]
}


def guideline(batch_tokens: int) -> Guideline:
    policy = RetentionPolicy.model_validate({**MOVES, "batch_tokens": batch_tokens})
    return SEED.model_copy(update={"policy": policy, "name": f"batch-{batch_tokens}"})


def run(batch_tokens: int, task_id: str = "ticket_queue-03") -> Episode:
    task = load_suite("builtin").task(task_id)
    agent = ReferenceAgent(task.reference, sources=need_sources(task))
    return run_episode(task, agent, GuidelineStrategy(guideline=guideline(batch_tokens)), EpisodeServices())


def test_batching_cuts_cache_breaks_on_a_builtin_task_and_keeps_success():
    eager, batched = run(0), run(500)
    assert eager.success and batched.success
    assert eager.metrics.cache_breaks >= 2
    assert batched.metrics.cache_breaks < eager.metrics.cache_breaks
    # The price of fewer rebuilds: what would have gone stays a little longer.
    assert batched.metrics.peak_tokens >= eager.metrics.peak_tokens


def test_every_batched_compression_frees_at_least_the_batch():
    batched = run(500)
    by_step: dict[int, int] = {}
    for record in batched.records:
        if record.stage == "replay":
            by_step[record.step] = by_step.get(record.step, 0) + record.tokens_before - record.tokens_after
    assert by_step and all(freed >= 500 for freed in by_step.values())


def test_a_batch_of_one_token_changes_nothing():
    eager, one = run(0), run(1)
    assert [s.request for s in one.steps] == [s.request for s in eager.steps]


def test_the_knob_off_leaves_guideline_files_and_versions_as_they_were():
    off = guideline(0)
    assert "batch_tokens" not in off.policy.model_dump(mode="json")
    assert "batch_tokens" not in off.to_markdown()
    on = guideline(500)
    assert on.version != off.version
    assert Guideline.from_markdown(on.to_markdown()).policy.batch_tokens == 500
    with pytest.raises(ValidationError):
        RetentionPolicy.model_validate({"batch_tokens": -1})


def test_edits_a_compressor_call_paid_for_are_kept_whatever_the_batch(compressor_for):
    compressor, _ = compressor_for()
    summarize = {"history": [{"move": "summarize", "over": 800}]}

    def episode(batch_tokens: int) -> Episode:
        policy = RetentionPolicy.model_validate({**summarize, "batch_tokens": batch_tokens})
        strategy = GuidelineStrategy(guideline=SEED.model_copy(update={"policy": policy}))
        return run_context(strategy, compressor=compressor).episode

    eager, batched = episode(0), episode(10**6)
    summaries = [r for r in batched.records if r.action == "summarize"]
    assert summaries and all(r.tokens_before - r.tokens_after < 10**6 for r in summaries)
    assert [s.request for s in batched.steps] == [s.request for s in eager.steps]
