"""The reply cache holds only usable replies: an empty one is an endpoint error, never stored or served."""

from __future__ import annotations

import sqlite3

import pytest

from optimizer.context.compressor import Compressor
from optimizer.errors import InfrastructureError
from optimizer.llm import ChatClient, EndpointConfig
from optimizer.llm.cache import ResponseCache
from optimizer.llm.usage import Usage


def compressor(url: str, cache: ResponseCache, **sampling) -> Compressor:
    config = EndpointConfig(base_url=url, model="stub", backoff_s=0.0, max_retries=0, **sampling)
    return Compressor(ChatClient(config, base_url=url, model="stub"), cache)


def compress(c: Compressor) -> str:
    return c.compress_observation(
        guideline="Keep ids.", task="Find the order.", tool="search", observation="order ORD-1 shipped", max_tokens=64
    ).text


@pytest.mark.parametrize("reply", [None, "", "# Refined Observation\n", "```\n\n```"])
def test_an_empty_compression_is_an_endpoint_error_and_never_cached(stub, tmp_path, reply):
    cache = ResponseCache(tmp_path / "replies.sqlite")
    broken = stub(lambda request: {"content": reply})
    with pytest.raises(InfrastructureError, match="empty"):
        compress(compressor(broken.base_url, cache))
    assert len(cache) == 0
    # The same request later, against the endpoint healthy again: answered, not served a poisoned reply.
    healthy = stub(lambda request: "ORD-1 shipped")
    assert compress(compressor(healthy.base_url, cache)) == "ORD-1 shipped"


def test_an_empty_reply_cached_by_an_earlier_version_is_a_miss(stub, tmp_path):
    cache = ResponseCache(tmp_path / "replies.sqlite")
    server = stub(lambda request: "ORD-1 shipped")
    first = compressor(server.base_url, cache)
    assert compress(first) == "ORD-1 shipped"
    # Poison the stored reply as versions before this fix did (an empty compression, cached).
    cache.close()
    with sqlite3.connect(tmp_path / "replies.sqlite") as db:
        db.execute("UPDATE replies SET text = ''")
    cache = ResponseCache(tmp_path / "replies.sqlite")
    again = compressor(server.base_url, cache)
    assert compress(again) == "ORD-1 shipped"
    assert again.calls == 1 and again.cache_hits == 0 and len(server.requests) == 2


@pytest.mark.parametrize("sampling", [{"frequency_penalty": 0.5}, {"seed": 3}])
def test_a_sampling_setting_never_shares_a_cached_reply(stub, tmp_path, sampling):
    # Replies cached without the setting would be served as if it had been sent: every figure after it wrong.
    cache = ResponseCache(tmp_path / "replies.sqlite")
    server = stub(lambda request: f"ORD-1 shipped {request.get('frequency_penalty', request.get('seed', '-'))}")
    assert compress(compressor(server.base_url, cache)) == "ORD-1 shipped -"
    changed = compressor(server.base_url, cache, **sampling)
    assert compress(changed) == f"ORD-1 shipped {next(iter(sampling.values()))}"
    again = compressor(server.base_url, cache, **sampling)
    assert compress(again) == compress(changed) and again.cache_hits == 1 and again.calls == 0
    assert len(server.requests) == 2


def test_the_cache_refuses_an_empty_reply(tmp_path):
    cache = ResponseCache(tmp_path / "replies.sqlite")
    with pytest.raises(ValueError, match="empty"):
        cache.put("k", " \n", Usage(10, 0, 0, "reported"))
    assert len(cache) == 0
