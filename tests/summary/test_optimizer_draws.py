"""The optimizer's replies are cached per draw: the same question asked again in one search is a new sample, and
a resumed search replays its draws in order without a call."""

from __future__ import annotations

from optimizer.llm.cache import ResponseCache
from optimizer.llm.client import ChatClient
from optimizer.llm.endpoint import EndpointConfig
from optimizer.summary.call import CachedOptimizer
from tests.conftest import scripted


def _optimizer(url: str, cache: ResponseCache, seed: int | None = None) -> CachedOptimizer:
    config = EndpointConfig(base_url=url, model="stub", max_retries=0, seed=seed)
    return CachedOptimizer(ChatClient(config, base_url=url, model="stub"), cache, 100)


def test_the_same_question_asked_again_is_a_new_draw_and_a_resumed_search_replays_both(stub, tmp_path):
    server = stub(scripted(["Keep every id.", "Keep every rule verbatim."]))
    cache = ResponseCache(tmp_path / "c.sqlite")
    first = _optimizer(server.base_url, cache)
    assert [first("Write a line.", 0.7), first("Write a line.", 0.7)] == ["Keep every id.", "Keep every rule verbatim."]
    resumed = _optimizer(server.base_url, cache)
    assert [resumed("Write a line.", 0.7), resumed("Write a line.", 0.7)] == [
        "Keep every id.",
        "Keep every rule verbatim.",
    ]
    assert len(server.requests) == 2 and resumed.cache_hits == 2 and resumed.calls == 0


def test_a_seeded_endpoint_gets_a_seed_of_its_own_for_each_draw(stub, tmp_path):
    server = stub(scripted(["Keep every id.", "Keep every rule verbatim."]))
    optimizer = _optimizer(server.base_url, ResponseCache(tmp_path / "c.sqlite"), seed=7)
    optimizer("Write a line.", 0.7)
    optimizer("Write a line.", 0.7)
    assert [r["seed"] for r in server.requests] == [7, 8]
