"""Two processes sharing the local model server (issue 30, item 14): each stops only what it owns, and a
shared server lives as long as one of its users does. Real processes and a fake llama-server binary (a
Python HTTP server answering /health), so no model is loaded."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import ROOT

FAKE_SERVER = """\
import http.server, sys
port = int(sys.argv[sys.argv.index("--port") + 1])

class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()

    def log_message(self, *args):
        pass

http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
"""

USER = """\
import sys
from optimizer.llm.local import server
server.model_ready = lambda profile: True  # the fake binary needs no weights
with server.LocalServers(log=lambda _: None) as servers:
    print(servers.base_url("qwen2.5-coder-0.5b"), flush=True)
    sys.stdin.readline()
"""


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    binary = tmp_path / "llama-server"
    binary.write_text(f"#!{sys.executable}\n" + FAKE_SERVER)
    binary.chmod(binary.stat().st_mode | stat.S_IEXEC)
    return {**os.environ, "ACON_HOME": str(tmp_path / "home"), "ACON_LLAMA_SERVER": str(binary)}


class User:
    """A process using the local server until it is told to leave (or killed)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", USER], cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()
        assert self.url.startswith("http://127.0.0.1:"), self.url

    def leave(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        assert self.process.wait(timeout=60) == 0

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=60)


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url.removesuffix("/v1") + "/health", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def stopped(url: str, within_s: float = 20) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not healthy(url):
            return True
        time.sleep(0.2)
    return False


@pytest.fixture
def users(env):
    started: list[User] = []

    def start() -> User:
        started.append(User(env))
        return started[-1]

    yield start
    for user in started:  # a failed assertion must not leave the fake server or its users behind
        if user.process.poll() is None:
            user.kill()
    state = Path(env["ACON_HOME"]) / "servers" / "qwen2.5-coder-0.5b.json"
    if state.exists():  # the fake server this test started
        with contextlib.suppress(ProcessLookupError):
            os.kill(json.loads(state.read_text())["pid"], signal.SIGKILL)


def test_the_server_lives_while_a_second_user_holds_it(users):
    first = users()
    second = users()
    assert second.url == first.url  # reused, not a second server
    first.leave()  # the process that started it ends first
    assert healthy(second.url)
    second.leave()
    assert stopped(second.url)


def test_a_killed_user_does_not_hold_the_server(users):
    first = users()
    second = users()
    first.kill()
    second.leave()  # the only live user leaves: nobody is left to stop it later
    assert stopped(second.url)


def test_a_server_stops_when_its_last_user_leaves_in_any_order(users):
    first = users()
    second = users()
    second.leave()
    assert healthy(first.url)
    third = users()
    assert third.url == first.url
    first.leave()
    assert healthy(third.url)
    third.leave()
    assert stopped(third.url)


# A server still loading its weights (minutes on a loaded machine) when the job that started it is stopped.
NEVER_HEALTHY = """\
import os, sys, time
with open(os.environ["FAKE_SERVER_PID"], "w") as out:
    out.write(str(os.getpid()))
time.sleep(600)
"""

STOPPED_WHILE_STARTING = """\
import os, signal, threading
from concurrent.futures import ThreadPoolExecutor
from optimizer.interrupts import exit_cleanly_on_sigterm, exit_now
from optimizer.llm.local import server
server.model_ready = lambda profile: True
exit_cleanly_on_sigterm()
try:
    with server.LocalServers(log=lambda _: None) as servers, ThreadPoolExecutor(1) as pool:
        # Asked on an episode's thread, as a tier-1 repeat's agent client is: the pool waits for it on the way out.
        pool.submit(servers.base_url, "qwen2.5-coder-0.5b").result()
except SystemExit as exc:
    exit_now(exc.code)
"""


def test_a_server_still_starting_is_stopped_with_the_process_that_started_it(tmp_path, env):
    binary = Path(env["ACON_LLAMA_SERVER"])
    binary.write_text(f"#!{sys.executable}\n" + NEVER_HEALTHY)
    pid_file = tmp_path / "server.pid"
    process = subprocess.Popen(
        [sys.executable, "-c", STOPPED_WHILE_STARTING], cwd=ROOT, env={**env, "FAKE_SERVER_PID": str(pid_file)}
    )
    deadline = time.monotonic() + 120
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    server_pid = int(pid_file.read_text())
    try:
        sent = time.monotonic()
        process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail("still running 60 s after SIGTERM")
        took = time.monotonic() - sent
        assert code == 143 and took < 10, f"exit {code} {took:.1f} s after SIGTERM"
        assert not alive(server_pid), "the server it was starting runs on"
    finally:
        process.kill()
        with contextlib.suppress(ProcessLookupError):
            os.kill(server_pid, signal.SIGKILL)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie has ended, only not been reaped yet


STUCK_USER = """\
import signal, sqlite3, sys
from optimizer import interrupts
# Started as a shell's background job is (CI's, a user's `acon optimize ... &`): SIGINT ignored, and so in the
# server it launches. Its last word once sent SIGINT, which such a server never heard.
signal.signal(signal.SIGINT, signal.SIG_IGN)
from optimizer.llm.local import server
server.model_ready = lambda profile: True
interrupts.EXIT_DEADLINE_S = 2
interrupts.exit_cleanly_on_sigterm()
with server.LocalServers(log=lambda _: None) as servers:
    print(servers.base_url("qwen2.5-coder-0.5b"), flush=True)
    store = sqlite3.connect(sys.argv[1], timeout=120)
    store.execute("INSERT INTO t VALUES (1)")  # waits in C on the test's lock: the cleanup cannot run
"""


@pytest.mark.parametrize("joined_by_another", [False, True])
def test_a_process_exiting_without_its_cleanup_still_stops_the_server_it_started(
    tmp_path, env, users, joined_by_another
):
    store = tmp_path / "store.db"
    holder = sqlite3.connect(store, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    stuck = subprocess.Popen(
        [sys.executable, "-c", STUCK_USER, str(store)], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert stuck.stdout is not None
        url = stuck.stdout.readline().strip()
        assert healthy(url)
        other = users() if joined_by_another else None
        time.sleep(0.5)
        stuck.send_signal(signal.SIGTERM)
        assert stuck.wait(timeout=60) == 143  # abandoned after its 2 s deadline
    finally:
        stuck.kill()
        holder.rollback()
    state = Path(env["ACON_HOME"]) / "servers" / "qwen2.5-coder-0.5b.json"
    if other is None:
        assert stopped(url) and not state.exists()
    else:  # another process still uses it: it stays, and leaves with its last user
        assert healthy(url) and state.exists()
        other.leave()
        assert stopped(url)
