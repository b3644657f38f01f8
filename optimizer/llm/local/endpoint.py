"""The local endpoint's process (`toolcall_proxy`): started beside the model servers, reused, stopped.

It listens on a fixed port (8080 unless `acon models start --port N`), so code written against the local
models names one address that stays the same from run to run, while each llama-server takes a free port.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from optimizer.errors import AconError
from optimizer.llm.local.profiles import acon_home
from optimizer.llm.local.server import Log, _alive, _healthy, _locked, _terminate

DEFAULT_PORT = 8080
STARTUP_TIMEOUT_S = 30.0
_NAME = "endpoint"  # its state and lock files sit beside the model servers'


@dataclass(frozen=True)
class EndpointState:
    pid: int
    port: int
    log: str

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


def _path() -> Path:
    return acon_home() / "servers" / f"{_NAME}.json"


def endpoint_status() -> EndpointState | None:
    """The running endpoint, or None."""
    try:
        state = EndpointState(**json.loads(_path().read_text()))
    except (FileNotFoundError, json.JSONDecodeError, TypeError):
        return None
    return state if _alive(state.pid) and _healthy(state.port) else None


def start_endpoint(port: int = DEFAULT_PORT, log: Log = print) -> EndpointState:
    """Start the endpoint on 127.0.0.1:`port`, or keep the one running there; another port is an error."""
    with _locked(_NAME):
        state = endpoint_status()
        if state is not None:
            if state.port != port:
                raise AconError(
                    f"the local endpoint already runs on port {state.port}; use it, or `acon models stop` first"
                )
            return state
        log_path = acon_home() / "servers" / f"{_NAME}.log"
        command = [sys.executable, "-m", "optimizer.llm.local.toolcall_proxy", "--port", str(port)]
        log(f"starting the local endpoint on 127.0.0.1:{port}")
        with log_path.open("w") as sink:
            process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if process.poll() is not None:
                tail = log_path.read_text().strip().splitlines()[-1:]
                raise AconError(f"the local endpoint exited with code {process.returncode}: {' '.join(tail)}")
            if _healthy(port):
                state = EndpointState(process.pid, port, str(log_path))
                _path().write_text(json.dumps(asdict(state)))
                return state
            time.sleep(0.1)
        process.kill()
        raise AconError(f"the local endpoint did not answer within {STARTUP_TIMEOUT_S:.0f}s (log {log_path})")


def stop_endpoint() -> bool:
    """Stop the endpoint. Returns whether one was running."""
    with _locked(_NAME):
        state = endpoint_status()
        _path().unlink(missing_ok=True)
    if state is None:
        return False
    _terminate(state.pid)
    return True
