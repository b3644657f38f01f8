"""Start, reuse and stop the embedded llama-server on 127.0.0.1.

One server per model profile. Its pid and port live in a state file so that a second job (or
`acon models start`) reuses it instead of loading the weights twice. A job stops only servers it
started itself or adopted from a dead owner; a server started by `acon models start` stays up.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from optimizer.errors import AconError
from optimizer.llm.local.install import model_ready, server_binary
from optimizer.llm.local.profiles import ModelProfile, acon_home, get_profile

PARALLEL_SLOTS = 2  # agent and compressor each keep their own KV-cached prefix
STARTUP_TIMEOUT_S = 300.0
CLI_OWNER = "cli"

Log = Callable[[str], None]


@dataclass(frozen=True)
class ServerState:
    profile: str
    pid: int
    port: int
    owner: str  # a job's pid as text, or "cli"
    log: str

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


def _state_path(profile: str) -> Path:
    return acon_home() / "servers" / f"{profile}.json"


@contextlib.contextmanager
def _locked(profile: str) -> Iterator[None]:
    path = _state_path(profile).with_suffix(".lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _read_state(profile: str) -> ServerState | None:
    path = _state_path(profile)
    try:
        return ServerState(**json.loads(path.read_text()))
    except (FileNotFoundError, json.JSONDecodeError, TypeError):
        return None


def _write_state(state: ServerState) -> None:
    path = _state_path(state.profile)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state.__dict__))
    os.replace(tmp, path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _owner_alive(owner: str) -> bool:
    return owner == CLI_OWNER or (owner.isdigit() and _alive(int(owner)))


def server_status(profile_name: str) -> ServerState | None:
    """The running server for a profile, or None."""
    state = _read_state(profile_name)
    if state and _alive(state.pid) and _healthy(state.port):
        return state
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _launch(profile: ModelProfile, owner: str, log: Log) -> ServerState:
    binary = server_binary()
    if binary is None:
        raise AconError("llama-server is not built; run `acon setup` (or set ACON_LLAMA_SERVER=/path/to/llama-server)")
    if not model_ready(profile):
        raise AconError(f"model {profile.name} is not installed; run `acon setup --model {profile.name}`")
    port = _free_port()
    log_path = acon_home() / "servers" / f"{profile.name}.log"
    threads = str(os.cpu_count() or 2)
    cmd = [
        str(binary),
        "-m",
        str(profile.path),
        "-a",
        profile.name,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "-c",
        str(profile.context_per_slot * PARALLEL_SLOTS),
        "-np",
        str(PARALLEL_SLOTS),
        "-t",
        threads,
        "--jinja",
        "--offline",
        "--no-webui",
        # Threads sleep instead of spinning while they wait: with polling, any other busy process on a
        # 2-core machine (the job itself, a test run) cut generation from ~5 to under 1 token/s here.
        "--poll",
        "0",
    ]
    log(f"starting {profile.name} on 127.0.0.1:{port}")
    with log_path.open("w") as sink:
        process = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log_path.read_text().strip().splitlines()[-1:] if log_path.exists() else []
            if process.returncode == -signal.SIGILL:
                raise AconError(
                    f"llama-server died of an illegal instruction (log {log_path}): it was built for CPU "
                    f"features this machine does not run; delete {binary} and run `acon setup` to rebuild it"
                )
            raise AconError(f"llama-server exited with code {process.returncode} (log {log_path}): {' '.join(tail)}")
        if _healthy(port):
            state = ServerState(profile.name, process.pid, port, owner, str(log_path))
            _write_state(state)
            return state
        time.sleep(0.25)
    process.kill()
    raise AconError(f"llama-server did not become healthy within {STARTUP_TIMEOUT_S:.0f}s (log {log_path})")


def start_detached(profile_name: str, log: Log = print) -> ServerState:
    """`acon models start`: start (or keep) a server that outlives this process."""
    profile = get_profile(profile_name)
    with _locked(profile.name):
        state = server_status(profile.name)
        if state is not None:
            if state.owner != CLI_OWNER:
                state = ServerState(state.profile, state.pid, state.port, CLI_OWNER, state.log)
                _write_state(state)
            return state
        return _launch(profile, CLI_OWNER, log)


def stop_server(profile_name: str) -> bool:
    """Stop a profile's server whoever started it. Returns whether one was running."""
    with _locked(profile_name):
        state = _read_state(profile_name)
        _state_path(profile_name).unlink(missing_ok=True)
    if state is None or not _alive(state.pid):
        return False
    _terminate(state.pid)
    return True


def _terminate(pid: int) -> None:
    # llama-server shuts down cleanly on SIGINT; SIGKILL only if it hangs.
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGINT)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(pid):
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.1)
    if _alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


class LocalServers:
    """Servers a job uses: reuses running ones, starts missing ones, stops only what it owns."""

    def __init__(self, log: Log = print) -> None:
        self._log = log
        self._owned: dict[str, ServerState] = {}
        self._owner = str(os.getpid())

    def base_url(self, profile_name: str) -> str:
        profile = get_profile(profile_name)
        with _locked(profile.name):
            state = server_status(profile.name)
            if state is not None and not _owner_alive(state.owner):
                # Orphaned by a killed job: adopt it so it is stopped when this job ends.
                state = ServerState(state.profile, state.pid, state.port, self._owner, state.log)
                _write_state(state)
                self._owned[profile.name] = state
            if state is None:
                state = _launch(profile, self._owner, self._log)
                self._owned[profile.name] = state
            # A server this process runs under another `LocalServers` (an outer one held open across many
            # short-lived ones) is that one's to stop: owning by pid alone, each inner close killed it.
            return state.base_url

    def close(self) -> None:
        for name, state in list(self._owned.items()):
            with _locked(name):
                current = _read_state(name)
                if current is not None and current.pid == state.pid:
                    _state_path(name).unlink(missing_ok=True)
            _terminate(state.pid)
            del self._owned[name]

    def __enter__(self) -> LocalServers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
