"""StubServer's fixed latency: every chat request takes at least `latency_s`, and requests overlap."""

from __future__ import annotations

import json
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from optimizer.testing.stub_server import StubServer


def _post(url: str) -> str:
    body = json.dumps({"model": "stub", "messages": [{"role": "user", "content": "hi"}]}).encode()
    request = urllib.request.Request(f"{url}/chat/completions", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())["choices"][0]["message"]["content"]


def test_latency_delays_each_request_and_concurrent_requests_overlap():
    with StubServer(lambda request: "ok", latency_s=0.2) as url:
        started = time.perf_counter()
        assert _post(url) == "ok"
        assert time.perf_counter() - started >= 0.2
        started = time.perf_counter()
        with ThreadPoolExecutor(4) as pool:
            assert list(pool.map(lambda _: _post(url), range(4))) == ["ok"] * 4
        assert time.perf_counter() - started < 0.7  # four 0.2 s requests in flight together, not 0.8 s in a row


def test_latency_defaults_to_zero_and_rejects_negative():
    assert StubServer(lambda request: "ok").latency_s == 0.0
    with pytest.raises(ValueError, match="latency_s"):
        StubServer(lambda request: "ok", latency_s=-1.0)
