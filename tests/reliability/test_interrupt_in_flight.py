"""SIGTERM or Ctrl-C while a model call is in flight: the call is cancelled, the process exits within seconds,
the episode it belonged to is not stored, and a rerun runs it.

The compressor endpoint is a local server that holds every compression request until the test ends (a
slow model's several-minute call); the endpoint probe and the agent are answered at once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from optimizer.testing.stub_server import StubServer
from tests.conftest import ROOT

EXIT_WITHIN_S = 5.0


class Endpoint:
    """Answers compression requests after `release` is set (never, while a test runs), all else at once."""

    def __init__(self, *, slow: bool) -> None:
        self.slow = slow
        self.release = threading.Event()
        self.compressions = threading.Semaphore(0)

    def __call__(self, request: dict[str, Any]) -> str:
        if "compress the working context" in json.dumps(request.get("messages", [])):
            self.compressions.release()
            if self.slow:
                self.release.wait(600)
            return "order RF-0001-3003 shipped 42.5"
        return "OK"


def experiment(tmp: Path, url: str, concurrency: int) -> Path:
    endpoint = f'base_url = "{url}"\nmodel = "stub"\nbackoff_s = 0.0\ntimeout_s = 600\n'
    path = tmp / "exp.toml"
    path.write_text(
        f'name = "interrupted"\nout = "{tmp / "out"}"\n[suite]\ntype = "smoke"\n'
        f'[run]\nsplit = "all"\nagent = "reference"\nconcurrency = {concurrency}\n'
        '[strategy]\ntype = "llm_observation"\nt_obs = 1\n'
        f"[tracking]\nenabled = false\n[endpoints.compressor]\n{endpoint}"
    )
    return path


def launch(path: Path, tmp: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env.update(ACON_HOME=str(tmp / "home"), PYTHONPATH=str(ROOT))
    # SIGINT at its default, as a terminal starts a foreground job: a test run started in the background by a
    # shell without job control (a CI script's `&`) hands its children SIGINT ignored, acon keeps it ignored
    # (tests/reliability/test_sigterm.py), and the Ctrl-C cases then waited out the 60 s below.
    code = "import signal; signal.signal(signal.SIGINT, signal.SIG_DFL); from optimizer.cli import main; main()"
    args = [sys.executable, "-c", code, "run", str(path), "--json", str(tmp / "out.json")]
    return subprocess.Popen(args, cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def stored(tmp: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for log in (tmp / "out").rglob("episodes.jsonl")
        for line in log.read_text().splitlines()
        if line.strip()
    ]


@pytest.mark.parametrize(
    ("sig", "code", "concurrency"), [(signal.SIGTERM, 143, 2), (signal.SIGINT, 130, 2), (signal.SIGINT, 130, 1)]
)
def test_a_signal_cancels_the_call_in_flight_and_a_rerun_runs_its_episode(tmp_path, sig, code, concurrency):
    slow = Endpoint(slow=True)
    with StubServer(slow) as url:
        path = experiment(tmp_path, url, concurrency)
        process = launch(path, tmp_path)
        try:
            assert slow.compressions.acquire(timeout=120), "the run never called the compressor"
            time.sleep(0.3)  # past the request's arrival: the client is waiting on the reply
            sent = time.monotonic()
            process.send_signal(sig)
            _, err = process.communicate(timeout=60)
            took = time.monotonic() - sent
        finally:
            process.kill()
            slow.release.set()
    assert took < EXIT_WITHIN_S, f"exited {took:.1f} s after the signal"
    assert process.returncode == code, err
    assert err.strip().splitlines()[-1].startswith("acon: interrupted"), err
    assert "Traceback" not in err, err
    assert stored(tmp_path) == []  # the interrupted episode is not stored, half or whole

    fast = Endpoint(slow=False)
    with StubServer(fast) as url:
        path = experiment(tmp_path, url, concurrency)
        rerun = launch(path, tmp_path)
        _, err = rerun.communicate(timeout=120)
    assert rerun.returncode == 0, err
    records = stored(tmp_path)
    assert sorted(r["task_id"] for r in records) == sorted({r["task_id"] for r in records})  # one each
    assert len(records) == 3 and all(r["outcome"] != "infra_error" for r in records)
