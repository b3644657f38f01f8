from __future__ import annotations

import json

import pytest

from optimizer.agent.llm import LlmAgent, parse_json_action
from optimizer.agent.loop import EpisodeServices, run_episode
from optimizer.context.strategies import parse_strategy
from optimizer.llm import ChatClient, EndpointConfig
from optimizer.world.suite import load_suite
from tests.conftest import scripted


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"tool": "get_order", "arguments": {"order_id": "A"}}', ("get_order", {"order_id": "A"})),
        ('```json\n{"tool": "x", "arguments": {}}\n```', ("x", {})),
        ('Sure! {"name": "x", "arguments": "{\\"a\\": 1}"} done', ("x", {"a": 1})),
    ],
)
def test_json_actions_parse(text, expected):
    assert parse_json_action(text) == expected


@pytest.mark.parametrize(
    "text", ["no json here", '{"tool": "x", "arguments": [1]}', '{"arguments": {}}', '{"tool": "x", "arguments": {']
)
def test_bad_json_actions_return_a_reason(text):
    assert isinstance(parse_json_action(text), str)


def agent_for(url: str) -> LlmAgent:
    config = EndpointConfig(base_url=url, model="stub", backoff_s=0.0)
    return LlmAgent(ChatClient(config, base_url=url, model="stub"), native=False)


def action(tool: str, **arguments) -> str:
    return json.dumps({"tool": tool, "arguments": arguments})


def test_scripted_model_completes_a_task_in_json_mode(stub):
    server = stub(scripted([action("get_order", order_id="ORD-1001"), action("finish", answer="It is shipped.")]))
    task = load_suite("smoke").task("smoke-status")
    episode = run_episode(task, agent_for(server.base_url), parse_strategy("none"), EpisodeServices())
    assert episode.outcome == "success", episode.reasons
    assert episode.metrics.steps == 2
    assert episode.metrics.peak_tokens > 0 and episode.token_source == "reported"
    sent = server.requests[-1]
    assert sent["response_format"]["type"] == "json_schema"
    assert "get_order" in sent["response_format"]["json_schema"]["schema"]["properties"]["tool"]["enum"]


def test_a_malformed_reply_is_fed_back_once(stub):
    server = stub(scripted(["not json", action("get_order", order_id="ORD-1001"), action("finish", answer="shipped")]))
    task = load_suite("smoke").task("smoke-status")
    episode = run_episode(task, agent_for(server.base_url), parse_strategy("none"), EpisodeServices())
    assert episode.outcome == "success"
    notice = server.requests[1]["messages"][-1]["content"]
    assert "could not be used" in notice


def test_two_malformed_replies_in_a_row_are_an_agent_error_not_a_crash(stub):
    server = stub(scripted(["not json", "still not json"]))
    task = load_suite("smoke").task("smoke-status")
    episode = run_episode(task, agent_for(server.base_url), parse_strategy("none"), EpisodeServices())
    assert episode.outcome == "failure"
    assert any("agent error" in r for r in episode.reasons)


def test_an_unreachable_model_is_an_infrastructure_error_not_a_failure():
    config = EndpointConfig(base_url="http://127.0.0.1:9/v1", model="stub", max_retries=0, timeout_s=1)
    agent = LlmAgent(ChatClient(config, base_url=config.base_url, model="stub"), native=False)
    task = load_suite("smoke").task("smoke-status")
    episode = run_episode(task, agent, parse_strategy("none"), EpisodeServices())
    assert episode.outcome == "infra_error" and episode.error


def test_unknown_tool_comes_back_as_an_error_result(stub):
    server = stub(scripted([action("delete_everything"), action("finish", answer="shipped")]))
    task = load_suite("smoke").task("smoke-status")
    episode = run_episode(task, agent_for(server.base_url), parse_strategy("none"), EpisodeServices())
    result = next(e for e in episode.entries if e.kind == "result")
    assert result.is_error and "unknown tool" in episode.text(result.text)


@pytest.mark.parametrize("native", [True, False])
def test_an_empty_reply_is_an_infrastructure_error_not_an_answer(stub, native):
    # Natively an empty reply used to be a final answer of "" (a task failure scored against the strategy).
    server = stub(lambda request: {"content": None})
    config = EndpointConfig(base_url=server.base_url, model="stub", backoff_s=0.0)
    agent = LlmAgent(ChatClient(config, base_url=server.base_url, model="stub"), native=native)
    task = load_suite("smoke").task("smoke-status")
    episode = run_episode(task, agent, parse_strategy("none"), EpisodeServices())
    assert episode.outcome == "infra_error" and episode.error.startswith("empty_reply:")


def test_recall_is_offered_to_the_agent_once_a_result_is_cleared_behind_a_handle(stub):
    from optimizer.context.guideline import Guideline
    from optimizer.context.policy import RetentionPolicy
    from optimizer.context.strategies import GuidelineStrategy

    mask = {"move": "mask", "keep_last": 1, "keep_first": False, "recoverable": True}
    policy = RetentionPolicy.model_validate({"history": [mask]})
    strategy = GuidelineStrategy(guideline=Guideline(name="mask", policy=policy, history="-", observation="-"))
    sheet, stock = action("get_product", sku="SKU-1708"), action("get_stock", sku="SKU-1708")
    server = stub(scripted([sheet, stock, stock, action("finish", answer="Read.")]))
    task = load_suite("reach_long").task("reach_long-restock-00")  # a product sheet is long enough to mask
    episode = run_episode(task, agent_for(server.base_url), strategy, EpisodeServices())
    assert episode.metrics.steps == 4 and not episode.error

    def listed(request: dict) -> bool:
        enum = request["response_format"]["json_schema"]["schema"]["properties"]["tool"]["enum"]
        in_prompt = "- recall(" in request["messages"][0]["content"]
        assert ("recall" in enum) == in_prompt  # the prompt and the grammar list the same tools
        return in_prompt

    # Requests 0 and 1 show every result as written; request 2 masks the product sheet behind a handle.
    assert [listed(r) for r in server.requests] == [False, False, True, True]
    assert 'recall(handle="h1")' in "".join(m["content"] for m in server.requests[2]["messages"])
