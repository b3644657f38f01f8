from __future__ import annotations

from optimizer.agent.episode import Episode
from optimizer.agent.loop import EpisodeServices, run_episode
from optimizer.agent.reference import ReferenceAgent
from optimizer.context.strategies import parse_strategy
from optimizer.world.suite import load_suite


def run(task_id: str, strategy="none") -> Episode:
    task = load_suite("smoke").task(task_id)
    return run_episode(task, ReferenceAgent(task.reference), parse_strategy(strategy), EpisodeServices())


def test_reference_agent_passes_every_smoke_task_on_full_context():
    for task in load_suite("smoke").tasks:
        episode = run(task.id)
        assert episode.outcome == "success", (task.id, episode.reasons)
        assert episode.deviations == []


def test_metrics_follow_acon_definitions():
    episode = run("smoke-total")
    inputs = [s.input_tokens for s in episode.steps]
    assert episode.metrics["peak_tokens"] == max(inputs)
    assert episode.metrics["steps"] == len(episode.steps) == 3
    # Tier 0 spends no agent tokens; the dependency integral has no output tokens to weigh.
    assert episode.metrics["agent_tokens"] == 0 and episode.metrics["dependency"] == 0
    assert episode.metrics["token_source"] == "counted"


def test_peak_excludes_the_system_prompt():
    episode = run("smoke-status")
    first = episode.steps[0]
    system = episode.text(first.request[0]["text"])
    assert first.request[0]["role"] == "system" and system
    from optimizer.tokens import count_message_tokens

    messages = [{"role": m["role"], "content": episode.text(m["text"])} for m in first.request]
    assert first.input_tokens == count_message_tokens(messages[1:])


def test_episode_round_trips_through_json():
    import json

    episode = run("smoke-refund")
    again = Episode.from_dict(json.loads(json.dumps(episode.to_dict())))
    assert again.metrics == episode.metrics
    assert again.locate("RF-0001-3003") == episode.locate("RF-0001-3003")


def test_locate_reports_each_checkpoint():
    episode = run("smoke-refund")
    trail = episode.locate("RF-0001-3003")
    assert trail[-1]["checkpoints"] == {1: True, 2: True, 3: True, 4: True, 5: True}
    assert trail[0]["checkpoints"][5] is False  # not yet produced at the first step


def test_counted_input_tokens_match_the_request_at_every_step():
    # Each message text is tokenized once per episode; every step's count must still be the full request's.
    from optimizer.tokens import count_message_tokens
    from tasks.builtin import BuiltinSuite

    task = max(BuiltinSuite(n_tasks=14).load().tasks, key=lambda t: len(t.reference))
    for strategy in ("none", "clear_tool_uses"):
        episode = run_episode(task, ReferenceAgent(task.reference), parse_strategy(strategy), EpisodeServices())
        assert len(episode.steps) >= 4
        for step in episode.steps:
            messages = [{"role": m["role"], "content": episode.text(m["text"])} for m in step.request]
            assert step.input_tokens == count_message_tokens(messages[1:])
