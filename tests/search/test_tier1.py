"""Tier 1 in the loop: pairs only where most seeds agree, and the behavioural cause of each real-agent failure."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

from optimizer.agent.episode_records import ToolCallRecord
from optimizer.agent.kinds import ReferenceAgentConfig
from optimizer.agent.loop import EpisodeServices, run_episode
from optimizer.context.recall import RECALL_TOOL
from optimizer.context.strategies import parse_strategy
from optimizer.evaluate.scores import Scores
from optimizer.mining.causes import (
    AGENT_VARIANCE,
    FACT_MISSING,
    RECALL_LOOP,
    RECALL_MISUSE,
    RECALL_NOT_MADE,
    VISIBLE_UNUSED,
    WRONG_ROW,
    behavioural_cause,
    parted_at_identical_request,
)
from optimizer.mining.pair_diff import diff_pair
from optimizer.search.tier1 import Repeats, majority_pairs, mostly
from tasks.reach_long import ReachLongSuite

SUITE = ReachLongSuite().load()
TASK = next(t for t in SUITE.tasks if t.id in SUITE.train_ids and "-restock-" in t.id)
CLEAR_ALL = parse_strategy({"type": "clear_tool_uses", "trigger_tokens": 200, "keep_last": 1})


def episode(strategy, recall: str = "never", task=TASK):
    agent = ReferenceAgentConfig(recall=recall).build(task, None)
    return run_episode(task, agent, strategy, EpisodeServices())


def evaluation(*episodes):
    """The two things `Repeats` reads off an evaluation: its episodes by task and their scores."""
    by_task = {e.task_id: e for e in episodes}
    return SimpleNamespace(episodes=by_task, scores=Scores.of(list(episodes), {}))


def test_a_pair_needs_full_context_to_pass_and_the_candidate_to_fail_on_most_seeds():
    win = episode(parse_strategy("none"))
    loss = episode(CLEAR_ALL)
    assert win.success and not loss.success
    full = Repeats((evaluation(win), evaluation(win), evaluation(loss)))
    assert [p.task.id for p in majority_pairs(full, Repeats((evaluation(loss),) * 3), [TASK])] == [TASK.id]
    assert majority_pairs(full, Repeats((evaluation(loss), evaluation(win), evaluation(win))), [TASK]) == []
    shaky = Repeats((evaluation(win), evaluation(loss), evaluation(loss)))
    assert majority_pairs(shaky, Repeats((evaluation(loss),) * 3), [TASK]) == []
    assert mostly(2, 3, passing=True) and not mostly(1, 2, passing=True) and mostly(2, 3, passing=False) is False


def test_repeats_pool_to_one_pairable_score_per_task():
    win, loss = episode(parse_strategy("none")), episode(CLEAR_ALL)
    repeats = Repeats((evaluation(win), evaluation(loss), evaluation(win)))
    assert repeats.passes() == {TASK.id: (2, 3)}
    assert abs(repeats.pass_rate() - 2 / 3) < 1e-9
    (score,) = repeats.scores().tasks
    assert score.success and score.peak_tokens == round((2 * win.metrics.peak_tokens + loss.metrics.peak_tokens) / 3)


def cause_of(compressed, full=None):
    full = full or episode(parse_strategy("none"))
    diff = diff_pair(full, compressed, TASK)
    return behavioural_cause(compressed, TASK, [m.literal for m in diff.missing])


def test_a_cleared_result_never_recalled_is_a_recall_not_made():
    assert cause_of(episode(CLEAR_ALL, recall="never")) == RECALL_NOT_MADE


def test_a_masked_result_with_no_handle_is_a_fact_missing():
    masked = episode(parse_strategy({"type": "mask_last_n", "n": 1, "keep_first": False}))
    assert not masked.success
    assert cause_of(masked) == FACT_MISSING


def _recall(handle: str, *, error: bool = False) -> ToolCallRecord:
    return ToolCallRecord(0, 0, RECALL_TOOL, {"handle": handle}, f"recall:{handle}", False, error, None, 10)


def test_recall_misuse_and_loops_come_before_the_missing_facts():
    base = episode(CLEAR_ALL, recall="never")
    misused = dataclasses.replace(base, tool_calls=[*base.tool_calls, _recall("ORD-1", error=True)])
    assert cause_of(misused) == RECALL_MISUSE
    looped = dataclasses.replace(base, tool_calls=[*base.tool_calls, *[_recall("h-1")] * 3])
    assert cause_of(looped) == RECALL_LOOP


def test_every_fact_shown_and_a_wrong_answer_is_visible_but_unused_unless_it_is_a_neighbour():
    full = episode(parse_strategy("none"))
    final = next(s for s in reversed(TASK.reference) if s.call is None)
    stale = next(n for n in final.needs if n.shown_as)
    unused = dataclasses.replace(full, outcome="failure", answers=["I could not finish."])
    assert cause_of(unused, full) == VISIBLE_UNUSED
    neighbour = dataclasses.replace(
        full, outcome="failure", answers=[final.answer.replace(stale.shown_as, stale.guess)]
    )
    assert cause_of(neighbour, full) == WRONG_ROW


def test_the_rendered_diff_names_the_cause():
    from optimizer.mining.diff_render import diff_html, diff_markdown

    full, compressed = episode(parse_strategy("none")), episode(CLEAR_ALL)
    diff = dataclasses.replace(diff_pair(full, compressed, TASK), cause=RECALL_NOT_MADE)
    assert f"behavioural cause (tier 1): {RECALL_NOT_MADE}" in diff_markdown(diff)
    assert RECALL_NOT_MADE in diff_html(diff)


def test_a_failure_that_parted_from_full_context_at_an_identical_request_is_the_agents_own_variance():
    full = episode(parse_strategy("none"))
    last = full.steps[-1]
    # Every request as full context's, and from the same last one another answer: the model's sampling.
    sampled = dataclasses.replace(
        full,
        outcome="failure",
        answers=["something else"],
        steps=[*full.steps[:-1], dataclasses.replace(last, action={**last.action, "answer": "something else"})],
    )
    assert parted_at_identical_request(full, sampled)
    missing = [m.literal for m in diff_pair(full, sampled, TASK).missing]
    assert behavioural_cause(sampled, TASK, missing, full) == AGENT_VARIANCE
    assert behavioural_cause(sampled, TASK, missing) == VISIBLE_UNUSED  # without its pair, nothing tells it apart
    # A cut changed what the agent saw before it acted otherwise: compression's doing, mined as a pair.
    compressed = episode(CLEAR_ALL)
    assert not parted_at_identical_request(full, compressed)
    wins = Repeats((evaluation(full),) * 2)
    assert majority_pairs(wins, Repeats((evaluation(sampled),) * 2), [TASK]) == []
    assert [p.diff.cause for p in majority_pairs(wins, Repeats((evaluation(compressed),) * 2), [TASK])] != []
    assert not parted_at_identical_request(full, full)  # never parted
