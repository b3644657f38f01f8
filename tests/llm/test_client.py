from __future__ import annotations

import pytest

from optimizer.errors import EndpointError, InfrastructureError
from optimizer.llm import ChatClient, EndpointConfig
from optimizer.testing.stub_server import FaultPlan
from tests.conftest import scripted


def client_for(url: str, **overrides) -> ChatClient:
    config = EndpointConfig(base_url=url, model="stub", backoff_s=0.0, **overrides)
    return ChatClient(config, base_url=url, model="stub")


def test_reported_usage_is_recorded(stub):
    server = stub(scripted(["hello"]))
    completion = client_for(server.base_url).complete([{"role": "user", "content": "hi"}])
    assert completion.text == "hello"
    assert completion.usage.source == "reported"
    assert completion.usage.prompt_tokens > 0 and completion.usage.completion_tokens == 1


def test_usage_is_counted_and_labelled_when_server_omits_it(stub):
    server = stub(scripted(["two words"]), report_usage=False)
    completion = client_for(server.base_url).complete([{"role": "user", "content": "hi there"}])
    assert completion.usage.source == "counted"
    assert completion.usage.completion_tokens == 2
    assert completion.usage.prompt_tokens >= 2


@pytest.mark.parametrize("fault", ["http_429", "http_500", "truncated_json"])
def test_transient_faults_are_retried(stub, fault):
    plan = FaultPlan(rate=0.5, kinds=(fault,), seed=3)
    server = stub(scripted(["ok"]), faults=plan)
    client = client_for(server.base_url, max_retries=8)
    for _ in range(6):
        assert client.complete([{"role": "user", "content": "x"}]).text == "ok"
    assert plan.injected[fault] > 0


def test_timeouts_are_retried_then_reported_as_infrastructure(stub):
    plan = FaultPlan(rate=1.0, kinds=("timeout",), timeout_s=1.0)
    server = stub(scripted(["ok"]), faults=plan)
    client = client_for(server.base_url, max_retries=1, timeout_s=0.3)
    with pytest.raises(InfrastructureError) as info:
        client.complete([{"role": "user", "content": "x"}])
    assert info.value.attempts == 2


def test_persistent_server_errors_become_infrastructure_errors(stub):
    server = stub(scripted(["ok"]), faults=FaultPlan(rate=1.0, kinds=("http_500",)))
    with pytest.raises(InfrastructureError) as info:
        client_for(server.base_url, max_retries=2).complete([{"role": "user", "content": "x"}])
    assert info.value.attempts == 3


def test_unreachable_endpoint_fails_the_probe_in_one_line():
    client = client_for("http://127.0.0.1:9/v1", max_retries=0, timeout_s=2)
    with pytest.raises(EndpointError) as info:
        client.probe()
    assert "\n" not in str(info.value)


def test_api_key_comes_from_the_named_variable(monkeypatch):
    from optimizer.errors import ConfigError

    config = EndpointConfig(base_url="http://x/v1", api_key_env="ACON_TEST_KEY")
    with pytest.raises(ConfigError, match="ACON_TEST_KEY"):
        config.api_key()
    monkeypatch.setenv("ACON_TEST_KEY", "sk-test")
    assert config.api_key() == "sk-test"
    assert "sk-test" not in str(config.describe())


def test_system_prompt_tokens_are_measured_once(stub):
    server = stub(scripted(["."]))
    client = client_for(server.base_url)
    first = client.system_tokens("You are terse.")
    assert first > 0 and client.system_tokens("You are terse.") == first
    assert len(server.requests) == 1


def test_a_seed_goes_with_every_request_and_into_the_run_identity(stub):
    server = stub(scripted(["ok"]))
    seeded = client_for(server.base_url, seed=7, temperature=0.3)
    assert seeded.complete([{"role": "user", "content": "x"}]).request["seed"] == 7
    assert seeded.config.describe() == {"base_url": server.base_url, "model": "stub", "temperature": "0.3", "seed": "7"}
    # Runs recorded before sampling settings existed keep their identity: the default adds nothing.
    plain = client_for(server.base_url)
    assert "seed" not in plain.complete([{"role": "user", "content": "x"}]).request
    assert plain.config.describe() == {"base_url": server.base_url, "model": "stub"}


@pytest.mark.parametrize("content", [None, "", "  \n "])
def test_an_empty_reply_is_an_infrastructure_error(stub, content):
    # A refusal, or a reasoning model that spent its tokens thinking: no text and no tool call is the
    # endpoint failing the request, not an answer (an agent's empty answer, a compression to nothing).
    server = stub(lambda request: {"content": content})
    with pytest.raises(InfrastructureError, match="empty reply") as info:
        client_for(server.base_url).complete([{"role": "user", "content": "x"}])
    assert info.value.kind == "empty_reply" and "\n" not in str(info.value)


def test_the_probes_accept_an_empty_reply(stub):
    # One- and two-token probes only measure the prompt or the endpoint's health: a reasoning model answers
    # them with no content at all, and that is not a failure.
    server = stub(lambda request: {"content": None})
    client = client_for(server.base_url)
    client.probe()
    assert client.system_tokens("You are terse.") > 0


def test_a_frequency_penalty_goes_with_every_request_and_into_the_run_identity(stub):
    server = stub(scripted(["ok"]))
    penalised = client_for(server.base_url, frequency_penalty=0.5)
    assert penalised.complete([{"role": "user", "content": "x"}]).request["frequency_penalty"] == 0.5
    assert penalised.config.describe()["frequency_penalty"] == "0.5"
    plain = client_for(server.base_url)
    assert "frequency_penalty" not in plain.complete([{"role": "user", "content": "x"}]).request
    assert "frequency_penalty" not in plain.config.describe()
