"""The local endpoint: one OpenAI-compatible address for every running model, with native `tool_calls`.

`acon models start` runs this in front of the llama-servers (one per model profile, each on a port of its
own): a request goes to the server of the model it names, so one `base_url` serves the 1.5B agent and the
0.5B compressor alike. A chat request with `tools=` comes back with the model's JSON action as
`tool_calls` (`actions`), whatever the client: the openai SDK, LangChain's `ChatOpenAI`, curl. Nothing is
made up: the calls are the model's own text, read; a reply with no action for one of the request's tools
passes through unchanged. A streamed request with tools is answered from the complete reply as one SSE
delta, because an action can be read only once its text is whole. Every other request is relayed as is.

Run as `python -m optimizer.llm.local.toolcall_proxy --port N` (what `acon models start` does).
"""

from __future__ import annotations

import argparse
import json
import time
import urllib.error
import urllib.request
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from optimizer.llm.local.actions import read_actions, tool_call_dicts
from optimizer.llm.local.profiles import PROFILES
from optimizer.llm.local.server import server_status

UPSTREAM_TIMEOUT_S = 1800.0  # a long prompt on 2 CPU cores takes minutes; the client's own timeout rules


def upstream_url(model: str) -> str | None:
    """The running llama-server that serves `model` (a profile name), or None."""
    state = server_status(model) if model in PROFILES else None
    return state.base_url if state is not None else None


def with_tool_calls(reply: dict[str, Any], tool_names: list[str]) -> dict[str, Any]:
    """`reply` with each choice's JSON actions moved from its text into `tool_calls`."""
    for choice in reply.get("choices") or ():
        message = choice.get("message") or {}
        if message.get("tool_calls") or not isinstance(message.get("content"), str):
            continue
        actions, rest = read_actions(message["content"], tool_names)
        if not actions:
            continue
        message["tool_calls"] = tool_call_dicts(actions, salt=f"{reply.get('id')}:{choice.get('index', 0)}")
        message["content"] = rest or None
        choice["finish_reason"] = "tool_calls"
    return reply


def as_stream(reply: dict[str, Any], include_usage: bool) -> bytes:
    """A complete reply as the SSE chunks of a streamed one."""
    base = {k: reply.get(k) for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    events = []
    for choice in reply.get("choices") or ():
        message = choice.get("message") or {}
        delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
        if message.get("tool_calls"):
            delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
        index = choice.get("index", 0)
        events.append({**base, "choices": [{"index": index, "delta": delta, "finish_reason": None}]})
        finish = choice.get("finish_reason")
        events.append({**base, "choices": [{"index": index, "delta": {}, "finish_reason": finish}]})
    if include_usage and reply.get("usage") is not None:
        events.append({**base, "choices": [], "usage": reply["usage"]})
    lines = [f"data: {json.dumps(event)}\n\n" for event in events] + ["data: [DONE]\n\n"]
    return "".join(lines).encode()


class Handler(BaseHTTPRequestHandler):
    server_version = "acon-local-endpoint"

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/health":
            self._json(HTTPStatus.OK, {"status": "ok"})
        elif self.path.rstrip("/") == "/v1/models":
            running = [name for name in PROFILES if upstream_url(name)]
            models = [{"id": name, "object": "model", "owned_by": "acon"} for name in running]
            self._json(HTTPStatus.OK, {"object": "list", "data": models})
        else:
            self._error(HTTPStatus.NOT_FOUND, f"no route {self.path}")

    def do_POST(self) -> None:
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        except json.JSONDecodeError as exc:
            self._error(HTTPStatus.BAD_REQUEST, f"request body is not JSON: {exc.msg}")
            return
        model = body.get("model") if isinstance(body, dict) else None
        base = upstream_url(str(model))
        if base is None:
            known = ", ".join(PROFILES)
            self._error(
                HTTPStatus.NOT_FOUND,
                f"model {model!r} is not running here; start it with `acon models start MODEL` ({known})",
            )
            return
        url = base.removesuffix("/v1") + self.path
        tools = body.get("tools") or []
        if self.path.rstrip("/") != "/v1/chat/completions" or not tools or body.get("tool_choice") == "none":
            self._relay(url, body)
            return
        stream = bool(body.pop("stream", False))
        include_usage = bool((body.pop("stream_options", None) or {}).get("include_usage"))
        try:
            status, raw = _post(url, body)
        except OSError as exc:
            self._error(HTTPStatus.BAD_GATEWAY, _unreachable(url, exc))
            return
        if status != HTTPStatus.OK:
            self._send(status, raw, "application/json")
            return
        names = [t.get("function", {}).get("name") for t in tools if isinstance(t, dict)]
        reply = with_tool_calls(json.loads(raw), [n for n in names if isinstance(n, str)])
        if stream:
            self._send(HTTPStatus.OK, as_stream(reply, include_usage), "text/event-stream")
        else:
            self._json(HTTPStatus.OK, reply)

    def _relay(self, url: str, body: dict[str, Any]) -> None:
        request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
        try:
            response = urllib.request.urlopen(request, timeout=UPSTREAM_TIMEOUT_S)
        except urllib.error.HTTPError as exc:
            self._send(exc.code, exc.read(), exc.headers.get("Content-Type", "application/json"))
            return
        except OSError as exc:
            self._error(HTTPStatus.BAD_GATEWAY, _unreachable(url, exc))
            return
        with response:
            self.send_response(response.status)
            self.send_header("Content-Type", response.headers.get("Content-Type", "application/json"))
            self.end_headers()
            while chunk := response.read1(65536):  # streamed replies pass through as they arrive
                self.wfile.write(chunk)
                self.wfile.flush()

    def _json(self, status: int, data: Any) -> None:
        self._send(status, json.dumps(data).encode(), "application/json")

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"error": {"message": message, "type": "invalid_request_error", "code": status}})

    def _send(self, status: int, payload: bytes, content_type: str) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up waiting (its own timeout)
            self.log_message("client gone before the reply to %s was sent", self.path)


def _post(url: str, body: dict[str, Any]) -> tuple[int, bytes]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=UPSTREAM_TIMEOUT_S) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _unreachable(url: str, exc: OSError) -> str:
    return f"the model server at {url} did not answer: {' '.join(str(exc).split())}"


def serve(port: int) -> ThreadingHTTPServer:
    """The endpoint, bound to 127.0.0.1:`port` (0: a free port); call `serve_forever()` on it."""
    httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    httpd.daemon_threads = True
    return httpd


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m optimizer.llm.local.toolcall_proxy")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    try:
        httpd = serve(args.port)
    except OSError as exc:
        raise SystemExit(f"acon local endpoint: cannot listen on 127.0.0.1:{args.port}: {exc.strerror}") from None
    print(f"{time.strftime('%H:%M:%S')} acon local endpoint on http://127.0.0.1:{args.port}/v1", flush=True)
    httpd.serve_forever()


if __name__ == "__main__":
    main()
