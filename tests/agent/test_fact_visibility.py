"""Fact visibility, the data-flow layer measured apart from behaviour and recovery: the needed facts the
request showed when their step came. A recall that puts a fact back saves the task but not the measure."""

from __future__ import annotations

from optimizer.context.guideline import SEED_GUIDELINE, RetentionPolicy, read_guideline
from optimizer.context.strategies import GuidelineStrategy, parse_strategy
from optimizer.evaluate.codec import decode_episode, encode_episode
from optimizer.evaluate.scores import Scores, TaskScore
from optimizer.report.model import Behaviour
from optimizer.search.report import behaviour
from tests.context.conftest import bin_episode


def guideline(**policy) -> GuidelineStrategy:
    seed = read_guideline(SEED_GUIDELINE)
    return GuidelineStrategy(guideline=seed.model_copy(update={"policy": RetentionPolicy.model_validate(policy)}))


def episode(strategy, recall_mode: str = "never"):
    return bin_episode(strategy, recall_mode)[1]


def test_full_context_shows_every_needed_fact():
    metrics = episode(parse_strategy("none")).metrics
    assert metrics.facts_needed and metrics.facts_visible == metrics.facts_needed


def test_a_lost_fact_lowers_visibility_whether_or_not_a_recall_saves_the_task():
    offload = guideline(write=[{"move": "offload", "classes": ["static"], "over": 300}])
    lost, recalled = episode(offload), episode(offload, recall_mode="honest")
    assert not lost.success and recalled.success and recalled.metrics.recall_calls == 1
    for run in (lost, recalled):
        assert run.metrics.facts_visible == run.metrics.facts_needed - 1  # the bin, at the answer step


def test_visibility_survives_the_store():
    run = episode(parse_strategy("none"))
    again = decode_episode(encode_episode(run))
    assert (again.metrics.facts_needed, again.metrics.facts_visible) == (
        run.metrics.facts_needed,
        run.metrics.facts_visible,
    )


def scores(*tasks: TaskScore) -> Scores:
    return Scores(tasks)


def test_behaviour_is_tier_one_success_where_tier_zero_saw_every_fact():
    tier0 = scores(
        TaskScore("a", True, 100, facts_needed=3, facts_visible=3),
        TaskScore("b", False, 100, facts_needed=3, facts_visible=2),
        TaskScore("c", True, 100, facts_needed=2, facts_visible=2),
    )
    tier1 = scores(TaskScore("a", True, 90), TaskScore("b", False, 90), TaskScore("c", False, 90))
    assert tier0.facts_visible == 7 / 8 and tier1.facts_visible is None
    # b was lost by compression (not visible); c was shown everything and still failed: behaviour.
    assert behaviour(tier1, tier0) == Behaviour(tasks=2, success=0.5)
    assert behaviour(tier1, scores(TaskScore("a", True, 1))) == Behaviour(tasks=0, success=None)
