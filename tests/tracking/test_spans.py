"""The span tree of an episode: nesting, types, usage and times, without MLflow."""

from __future__ import annotations

import dataclasses

from optimizer.agent.loop import EpisodeServices, run_episode
from optimizer.agent.reference import ReferenceAgent
from optimizer.context.strategies import parse_strategy
from optimizer.tracking.spans import (
    AGENT,
    CHAIN,
    CHAT_MODEL,
    LLM,
    MEMORY,
    TOOL,
    UNTRUSTED,
    clip,
    episode_tree,
    token_usage,
)
from optimizer.world.suite import load_suite
from tests.tracking.conftest import EPISODE_USAGE, make_episode


def test_tree_has_one_span_per_model_call_tool_call_and_compression():
    root = episode_tree(make_episode())
    assert root.span_type == AGENT and root.name == "episode t-1 · guideline"
    kinds = [(c.span_type, c.name) for c in root.children]
    assert kinds == [
        (CHAT_MODEL, "agent step 0"),
        (TOOL, "get_order"),
        (CHAIN, "compress write: offload"),  # right after the call whose result it offloaded
        (CHAIN, "compress replay: summarize"),  # before the step it prepared
        (CHAIN, "compress budget: truncate"),
        (CHAT_MODEL, "agent step 1"),
        (MEMORY, "recall h1"),
    ]
    summarize = root.children[3]
    assert [(c.span_type, c.usage) for c in summarize.children] == [
        (LLM, {"input_tokens": 300, "output_tokens": 30, "total_tokens": 330})
    ]
    assert (summarize.attributes["acon.tokens_before"], summarize.attributes["acon.tokens_after"]) == (40, 15)
    assert summarize.attributes["acon.dropped.static"] == 25
    assert summarize.attributes["acon.dropped_classes"] == ["static"]


def test_compressions_show_what_went_in_and_came_out_with_tool_text_marked_untrusted():
    root = episode_tree(make_episode())
    write, summarize = root.children[2], root.children[3]
    assert write.inputs["tool_output"] == "order ORD-1: 3 items, total 42.00"
    assert write.outputs["as_written"] == "[offloaded: handle h1]"
    assert write.inputs["trust"] == UNTRUSTED
    compressor = summarize.children[0]
    assert compressor.inputs == {
        "prompt": 'Guideline: keep ids.\n<data source="history">\norder ORD-1: 3 items\n</data>',
        "trust": UNTRUSTED,
    }
    assert compressor.outputs == {"reply": "# History Summary\nORD-1 has 3 items."}
    assert compressor.attributes["acon.untrusted_input"] is True


def test_usage_sits_on_leaf_model_calls_and_sums_to_the_episode():
    root = episode_tree(make_episode())
    usages = [n.usage for n in root.walk() if n.usage is not None]
    assert all(not n.children for n in root.walk() if n.usage is not None)
    total = {k: sum(u[k] for u in usages) for k in EPISODE_USAGE}
    assert total == EPISODE_USAGE
    assert root.children[0].usage["cache_read_input_tokens"] == 50


def test_children_lie_inside_the_root_in_order_and_measured_times_are_kept():
    root = episode_tree(make_episode())
    assert root.start_s == 0.0 and root.end_s >= 4.0
    starts = [c.start_s for c in root.children]
    assert starts == sorted(starts)
    for node in root.walk():
        assert root.start_s <= node.start_s <= node.end_s <= root.end_s
    step0, step1 = root.children[0], root.children[5]
    assert (step0.start_s, step0.end_s) == (0.5, 1.5)
    assert (step1.start_s, step1.end_s) == (2.5, 3.5)
    # The tool call and its write compression share the first half of the gap; replay and budget the second.
    assert 1.5 <= root.children[1].start_s < root.children[2].end_s <= 2.0 <= root.children[3].start_s
    estimated = [c for c in root.children if c.span_type != CHAT_MODEL]
    assert all(c.attributes.get("acon.timing") == "estimated" for c in estimated)


def test_model_call_shows_only_new_messages_and_the_action():
    root = episode_tree(make_episode())
    step0, step1 = root.children[0], root.children[5]
    assert [m["role"] for m in step0.inputs["messages"]] == ["system", "user"]
    assert step1.inputs["messages"] == [
        {"role": "assistant", "content": '{"tool": "get_order"}'},
        {"role": "user", "content": "[offloaded: handle h1]"},
    ]
    assert step1.inputs["context_messages"] == 4
    assert step0.outputs == {"tool_calls": [{"name": "get_order", "arguments": {"id": "ORD-1"}}]}
    assert step1.outputs == {"answer": "refunded"}
    tool = root.children[1]
    assert tool.outputs == {"result": "order ORD-1: 3 items, total 42.00", "as_written": "[offloaded: handle h1]"}


def test_failed_episode_marks_its_root_span():
    assert episode_tree(make_episode(outcome="failure")).error
    assert not episode_tree(make_episode()).error


def test_failures_and_errors_are_marked():
    episode = make_episode(outcome="infra_error")
    episode.steps[1].action = {"calls": [], "malformed": "not JSON", "raw": "oops"}
    episode.tool_calls[0] = dataclasses.replace(episode.tool_calls[0], is_error=True)
    root = episode_tree(episode)
    assert root.error
    assert root.children[1].error and root.children[5].error
    assert root.children[5].outputs == {"malformed": "not JSON", "raw": "oops"}


def test_real_reference_episodes_map_every_step_and_call():
    suite = load_suite("smoke")
    for strategy in ("none", "offload_preview"):
        for task in suite.tasks:
            agent = ReferenceAgent(task.reference)
            episode = run_episode(task, agent, parse_strategy(strategy), EpisodeServices())
            root = episode_tree(episode)
            nodes = list(root.walk())
            assert sum(n.span_type == CHAT_MODEL for n in nodes) == len(episode.steps)
            assert sum(n.span_type in (TOOL, MEMORY) for n in nodes) == len(episode.tool_calls)
            assert sum(n.span_type == CHAIN for n in nodes) == len(episode.records)
            assert root.inputs["task"] == task.instruction


def test_episode_without_steps_is_a_lone_root():
    episode = make_episode(outcome="infra_error")
    episode.steps, episode.tool_calls, episode.records = [], [], []
    root = episode_tree(episode)
    assert root.children == [] and root.end_s == 4.0


def test_helpers():
    assert clip("x" * 10, 4) == "xxxx… [6 more characters]"
    assert clip("short") == "short" and clip(None) is None
    assert token_usage(None) is None
    assert token_usage({"prompt_tokens": 3, "completion_tokens": 2}) == {
        "input_tokens": 3,
        "output_tokens": 2,
        "total_tokens": 5,
    }
