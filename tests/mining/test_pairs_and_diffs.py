"""Mining on real episodes of the workbench task: which runs make pairs, and what a pair's diff says was
lost, where and by which move; the rendered diffs show it without letting tool output write markup."""

from __future__ import annotations

import dataclasses

import pytest

from optimizer.context.guideline import SEED_GUIDELINE, RetentionPolicy, read_guideline
from optimizer.context.strategies import GuidelineStrategy, parse_strategy
from optimizer.mining.diff_render import diff_html, diff_markdown
from optimizer.mining.pair_diff import PairDiff, diff_pair
from optimizer.mining.pairs import compressed_successes, find_pairs, is_near_miss
from tests.context.conftest import bin_episode


def guideline(**policy) -> GuidelineStrategy:
    seed = read_guideline(SEED_GUIDELINE)
    return GuidelineStrategy(guideline=seed.model_copy(update={"policy": RetentionPolicy.model_validate(policy)}))


# Keeps the first line of a large static result only: the catalogue line with the bin is lost.
HEAD_ONLY = guideline(
    write=[
        {
            "move": "extract",
            "classes": ["static"],
            "over": 300,
            "select": {"head": 1, "mention_task": False, "mention_calls": False},
        }
    ]
)
# Offloads the same result behind a handle: an honest agent recalls it and still succeeds.
OFFLOAD = guideline(write=[{"move": "offload", "classes": ["static"], "over": 300}])


def episode(strategy, recall_mode: str = "never"):
    return bin_episode(strategy, recall_mode)


@pytest.fixture(scope="module")
def runs():
    task, full = episode(parse_strategy("none"))
    _, lost = episode(HEAD_ONLY)
    _, recalled = episode(OFFLOAD, recall_mode="honest")
    assert full.success and not lost.success and recalled.success
    return task, full, lost, recalled


def test_a_pair_is_full_solved_and_compressed_failed(runs):
    _, full, lost, recalled = runs
    assert [(f.task_id, c.strategy) for f, c in find_pairs([full], [lost])] == [(full.task_id, lost.strategy)]
    assert find_pairs([full], [recalled]) == []  # solved: no pair unless near misses are asked for
    assert find_pairs([lost], [lost]) == []  # full context must have solved it


def test_an_infrastructure_error_is_never_a_pair(runs):
    _, full, lost, _ = runs
    dead = dataclasses.replace(lost, outcome="infra_error", error="endpoint unreachable")
    assert find_pairs([full], [dead]) == [] and find_pairs([full], [dead], near_misses=True) == []


def test_a_success_that_needed_a_recall_is_a_near_miss(runs):
    _, full, lost, recalled = runs
    assert is_near_miss(recalled) and not is_near_miss(full)
    assert [c.strategy for _, c in find_pairs([full], [recalled], near_misses=True)] == [recalled.strategy]
    assert compressed_successes([full], [recalled, lost]) == [recalled]


def test_the_diff_names_the_lost_literal_its_class_checkpoint_and_move(runs):
    task, full, lost, _ = runs
    diff = diff_pair(full, lost, task)
    fact = next(f for f in diff.missing if f.literal == "B-14")
    assert (fact.retention, fact.checkpoint, fact.checkpoint_name) == ("static", 2, "history as written")
    assert fact.record is not None and fact.record["action"] == "extract"
    assert diff.divergence_step is not None and "B-14" in diff.full_context and "B-14" not in diff.compressed_context
    assert diff.compressed_reasons == ["the answer does not name bin B-14"]
    assert PairDiff.from_dict(diff.to_dict()) == diff


def test_the_rendered_diffs_show_the_loss_and_escape_tool_output(runs):
    task, full, lost, _ = runs
    diff = diff_pair(full, lost, task)
    markdown = diff_markdown(diff)
    assert "| `B-14` | value | static | 2 (history as written) |" in markdown
    hostile = dataclasses.replace(
        diff, compressed_context=diff.compressed_context + "\n<script>alert('tool output')</script>"
    )
    page = diff_html(hostile)
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "<code>B-14</code>" in page
