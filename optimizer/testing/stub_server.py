"""An OpenAI-compatible chat server on 127.0.0.1 for tests and benchmarks.

Two modes. *Scripted*: a `responder(request) -> reply text` answers every request with zero model
latency, or after a fixed `latency_s` (harness-overhead benchmarks, unit tests). *Proxy*: requests
are forwarded to an upstream server (the real local model); its HTTP errors are relayed, and an upstream
that cannot be reached answers 502, as a gateway would. Either way a seeded fault injector can
return 429, 500, a timeout (no reply), a truncated JSON body, or a malformed tool call at a set rate,
and counts what it did (`faults.injected`; per request in `faulted`, aligned with `requests`). A malformed
tool call is only injected into requests whose reply is parsed as an agent action; other requests draw
from the remaining kinds. With `models`, a request for any other model gets a 404, as from a real server.
"""

from __future__ import annotations

import http.client
import json
import random
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from optimizer.tokens import count_message_tokens, count_tokens

Responder = Callable[[dict[str, Any]], str | dict[str, Any]]
FAULTS = ("http_429", "http_500", "timeout", "truncated_json", "malformed_action")


@dataclass
class FaultPlan:
    rate: float = 0.0
    kinds: tuple[str, ...] = FAULTS
    seed: int = 0
    timeout_s: float = 3.0  # how long a "timeout" fault stalls before dropping the connection
    retry_after_s: float | None = None  # sent as `Retry-After` with an injected 429
    injected: Counter = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._lock = threading.Lock()

    def draw(self, *, action: bool = True) -> str | None:
        """A fault for the next request, or None; `action`: whether its reply is parsed as an agent action."""
        kinds = self.kinds if action else tuple(k for k in self.kinds if k != "malformed_action")
        with self._lock:
            if self.rate <= 0 or self._rng.random() >= self.rate or not kinds:
                return None
            kind = self._rng.choice(kinds)
            self.injected[kind] += 1
            return kind


def expects_action(request: dict[str, Any]) -> bool:
    """Whether a chat request's reply is read as an agent action (native tools, or acon's JSON format)."""
    if request.get("tools"):
        return True
    messages = request.get("messages") or [{}]
    return messages[0].get("role") == "system" and '{"tool":' in str(messages[0].get("content", ""))


def _error_body(raw: bytes, fallback: str) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    return body if isinstance(body, dict) else {"error": {"message": fallback}}


class StubServer:
    """`with StubServer(responder) as url:` gives a base URL ending in /v1."""

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        upstream: str | None = None,
        faults: FaultPlan | None = None,
        report_usage: bool = True,
        latency_s: float = 0.0,
        models: tuple[str, ...] | None = None,
    ) -> None:
        if (responder is None) == (upstream is None):
            raise ValueError("give exactly one of responder or upstream")
        if latency_s < 0:
            raise ValueError("latency_s must be >= 0")
        self.responder = responder
        self.upstream = upstream.rstrip("/") if upstream else None
        self.faults = faults or FaultPlan()
        self.report_usage = report_usage
        self.latency_s = latency_s  # added to every chat request, as if a model took that long
        self.models = models
        self.requests: list[dict[str, Any]] = []
        self.faulted: list[str | None] = []  # the fault injected into each request (None: answered normally)
        self._log_lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self.in_flight = 0
        self.most_in_flight = 0  # most chat requests answered at once: what a concurrency bound must cap
        self.times: list[float] = []  # when each chat request arrived (time.time()), aligned with `requests`

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> str:
        handler = type("Handler", (_StubHandler,), {"stub": self})
        self._server = _Server(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self.base_url

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _reply(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.upstream is not None:
            data = json.dumps(request).encode()
            upstream = urllib.request.Request(
                f"{self.upstream}/chat/completions", data=data, headers={"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(upstream, timeout=600) as response:
                return json.loads(response.read())
        assert self.responder is not None
        answer = self.responder(request)
        # A responder returns the reply text, or a whole assistant message (to script native `tool_calls`).
        message = (
            {"role": "assistant", **answer} if isinstance(answer, dict) else {"role": "assistant", "content": answer}
        )
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        reply: dict[str, Any] = {
            "id": "stub",
            "object": "chat.completion",
            "created": 0,
            "model": request.get("model", "stub"),
            "choices": [{"index": 0, "finish_reason": finish, "message": message}],
        }
        if self.report_usage:
            prompt = count_message_tokens(request.get("messages", []))
            calls = message.get("tool_calls")
            completion = count_tokens(str(message.get("content") or "") + (json.dumps(calls) if calls else ""))
            reply["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
        return reply


class _StubHandler(BaseHTTPRequestHandler):
    """Answers one HTTP request as `stub` would: health and model probes, chat requests with their faults."""

    stub: StubServer  # set on the subclass each server makes

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/health", "/v1/models", "/models"):
            self._send(200, {"status": "ok", "data": [{"id": "stub"}]})
        else:
            self._send(404, {"error": "not found"})

    def do_POST(self) -> None:
        stub = self.stub
        length = int(self.headers.get("Content-Length", 0))
        request = json.loads(self.rfile.read(length) or b"{}")
        if stub.models is not None and request.get("model") not in stub.models:
            return self._send(
                404,
                {"error": {"message": f"model {request.get('model')!r} not found", "type": "not_found_error"}},
            )
        with stub._log_lock:
            fault = stub.faults.draw(action=expects_action(request))
            stub.requests.append(request)
            stub.faulted.append(fault)
            stub.times.append(time.time())
            stub.in_flight += 1
            stub.most_in_flight = max(stub.most_in_flight, stub.in_flight)
        try:
            return self._answer(request, fault)
        finally:
            with stub._log_lock:
                stub.in_flight -= 1

    def _answer(self, request: dict[str, Any], fault: str | None) -> None:
        stub = self.stub
        if fault == "http_429":
            after = stub.faults.retry_after_s
            headers = {} if after is None else {"Retry-After": f"{after:g}"}
            return self._send(429, {"error": {"message": "rate limited (injected)"}}, headers)
        if fault == "http_500":
            return self._send(500, {"error": {"message": "server error (injected)"}})
        if fault == "timeout":
            time.sleep(stub.faults.timeout_s)
            self.close_connection = True
            return None
        if stub.latency_s > 0:
            time.sleep(stub.latency_s)
        try:
            reply = stub._reply(request)
        except urllib.error.HTTPError as exc:  # the upstream's own error status, relayed
            return self._send(exc.code, _error_body(exc.read(), f"upstream HTTP {exc.code}"))
        except (OSError, http.client.HTTPException) as exc:  # upstream down: what a gateway says
            return self._send(502, {"error": {"message": f"upstream unreachable: {exc}"}})
        if fault == "malformed_action":
            reply["choices"][0]["message"]["content"] = '{"tool": "get_order", "arguments": {"order_id": '
        if fault == "truncated_json":
            body = json.dumps(reply).encode()[:40]
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return None
        return self._send(200, reply)

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hung up mid-reply (a cancelled call, an injected timeout) is not a server fault.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)
