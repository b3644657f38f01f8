"""Start, reuse and stop the embedded llama-server on 127.0.0.1.

One server per model profile. Its pid and port live in a state file so that a second job (or
`acon models start`) reuses it instead of loading the weights twice. The file also lists the server's
users (one token per `LocalServers` object: pid and object); a user leaving stops the server only when no
live user is left, so a job that started it and ends first does not pull it from under another. A server
started by `acon models start` stays up whoever leaves.
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

from optimizer import interrupts
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
    owner: str  # the starting user's token, or "cli"
    log: str
    users: tuple[str, ...] = ()  # tokens `pid:object`; a token whose pid is dead no longer counts

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
        data = json.loads(path.read_text())
        return ServerState(**{**data, "users": tuple(data.get("users", ()))})
    except (FileNotFoundError, json.JSONDecodeError, TypeError, AttributeError):
        return None


def _write_state(state: ServerState) -> None:
    path = _state_path(state.profile)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({**state.__dict__, "users": list(state.users)}))
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


def _user_alive(token: str) -> bool:
    pid = token.split(":", 1)[0]
    return pid.isdigit() and _alive(int(pid))


def _live_users(state: ServerState, *, without: str | None = None) -> tuple[str, ...]:
    return tuple(u for u in state.users if u != without and _user_alive(u))


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
    try:
        pid = _wait_healthy(process, port, log_path, binary)
    except BaseException:
        # Not up yet, so no state file names it and no other user can know of it: it is this process's to
        # stop, on a timeout as on SIGTERM (a server left loading weights in its own session runs on).
        process.kill()
        process.wait()
        raise
    users = () if owner == CLI_OWNER else (owner,)
    state = ServerState(profile.name, pid, port, owner, str(log_path), users)
    _write_state(state)
    return state


def _wait_healthy(process: subprocess.Popen, port: int, log_path: Path, binary: Path) -> int:
    """The server's pid once it answers /health; a stopping process stops waiting (minutes on a loaded machine)."""
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
            return process.pid
        interrupts.sleep(0.25)
    raise AconError(f"llama-server did not become healthy within {STARTUP_TIMEOUT_S:.0f}s (log {log_path})")


def start_detached(profile_name: str, log: Log = print) -> ServerState:
    """`acon models start`: start (or keep) a server that outlives this process."""
    profile = get_profile(profile_name)
    with _locked(profile.name):
        state = server_status(profile.name)
        if state is not None:
            if state.owner != CLI_OWNER:
                state = ServerState(state.profile, state.pid, state.port, CLI_OWNER, state.log, state.users)
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
    # llama-server shuts down cleanly on SIGTERM as on SIGINT; SIGKILL only if it hangs. Not SIGINT: a server
    # launched from a shell's background job inherits SIGINT ignored, and a stand-in binary keeps it so.
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(pid):
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.1)
    if _alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


class LocalServers:
    """Servers a job uses: reuses running ones, starts missing ones, and on close stops a server only if no
    other live user (another job, or another `LocalServers` of this process) still holds it."""

    def __init__(self, log: Log = print) -> None:
        self._log = log
        self._using: dict[str, int] = {}  # profile -> pid of the server this object registered with
        self._launched: set[int] = set()
        # One token per object, not per process: an outer `LocalServers` held open across short-lived inner
        # ones (the probe's trials) keeps its server when an inner one closes.
        self._token = f"{os.getpid()}:{id(self):x}"
        self._withdraw_last_word: Callable[[], None] | None = None

    def base_url(self, profile_name: str) -> str:
        profile = get_profile(profile_name)
        with _locked(profile.name):
            state = server_status(profile.name)
            if state is None:
                state = _launch(profile, self._token, self._log)
                self._launched.add(state.pid)
                if self._withdraw_last_word is None:
                    self._withdraw_last_word = interrupts.on_abandon(self._stop_launched_at_once)
            elif self._token not in state.users:
                users = (*_live_users(state), self._token)
                state = ServerState(state.profile, state.pid, state.port, state.owner, state.log, users)
                _write_state(state)
            self._using[profile.name] = state.pid
            return state.base_url

    def close(self) -> None:
        for name, pid in list(self._using.items()):
            stop = pid in self._launched  # unless its state file still lists users: ours to end if gone
            with _locked(name):
                current = _read_state(name)
                if current is not None and current.pid == pid:
                    left = _live_users(current, without=self._token)
                    stop = not left and current.owner != CLI_OWNER
                    if stop:
                        _state_path(name).unlink(missing_ok=True)
                    else:
                        _write_state(ServerState(current.profile, pid, current.port, current.owner, current.log, left))
            if stop:
                _terminate(pid)
            del self._using[name]
        if self._withdraw_last_word is not None:
            self._withdraw_last_word()
            self._withdraw_last_word = None

    def _stop_launched_at_once(self) -> None:
        """`close()` for a process exiting without its cleanup: the servers it launched and no other process
        uses get SIGTERM (llama-server shuts itself down) and lose their state file; nothing waits, and no lock is
        taken (the stuck main thread may hold it). A user that joined in that moment starts a new server."""
        for name, pid in list(self._using.items()):  # the main thread may be changing it
            state = _read_state(name)
            if pid not in self._launched or state is None or state.pid != pid or state.owner == CLI_OWNER:
                continue
            if any(not u.startswith(f"{os.getpid()}:") for u in _live_users(state)):
                continue
            _state_path(name).unlink(missing_ok=True)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    def __enter__(self) -> LocalServers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
