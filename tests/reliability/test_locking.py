"""One writer per directory: a second `acon optimize` / `acon run` on the same directory is refused in one line
naming the holder's pid, and a lock left by a killed process is taken over. Real processes throughout."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from optimizer.locking import LOCK_NAME, DirectoryBusy, exclusive
from optimizer.testing.scripted import scripted_models
from tests.conftest import ROOT
from tests.reliability.conftest import HOLD, hold, write_job

SMOKE = str(ROOT / "experiments" / "smoke.toml")
ACON = [sys.executable, "-m", "optimizer"]
FINISH = json.dumps({"tool": "finish", "arguments": {"answer": "shipped 42.5 RF-0001-3003"}})
WAIT_S = 120.0


class Gate:
    """A stub responder that answers endpoint probes at once and holds every other request until opened,
    so the first process is provably mid-job (holding its lock) while the second one starts."""

    def __init__(self, reply) -> None:
        self.reply = reply
        self.opened = threading.Event()
        self.held = threading.Event()

    def __call__(self, request: dict) -> str:
        if request["messages"][-1].get("content") == "Reply with OK.":
            return "OK"
        self.held.set()
        self.opened.wait(WAIT_S)
        return self.reply(request) if callable(self.reply) else self.reply


def holder_of(directory: Path, timeout_s: float = WAIT_S) -> dict:
    """The lock record of `directory` once a process holds it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            record = json.loads((directory / LOCK_NAME).read_text() or "null")
        except (FileNotFoundError, ValueError):
            record = None
        if record:
            return record
        time.sleep(0.1)
    raise AssertionError(f"nothing locked {directory} within {timeout_s}s")


def start(*args: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([*ACON, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*ACON, *args], cwd=cwd, capture_output=True, text=True, timeout=WAIT_S)


def refusal(done: subprocess.CompletedProcess, pid: int) -> str:
    assert done.returncode == DirectoryBusy.exit_code, done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("acon: error: ") and "in use by another acon process" in last, done.stderr
    assert f"pid {pid}" in last, last
    return last


@pytest.fixture
def first() -> Iterator[list[subprocess.Popen]]:
    """Processes a test started; any still running at the end are killed."""
    started: list[subprocess.Popen] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait()


# ---------------------------------------------------------------------------------------------- two processes


def test_a_second_optimize_on_the_same_job_directory_is_refused(tmp_path, stub, first):
    gate = Gate(scripted_models)
    path = write_job(tmp_path, stub(gate).base_url)
    job = tmp_path / "job"
    first.append(start("optimize", str(path), cwd=tmp_path))
    holder = holder_of(job)
    assert holder["pid"] == first[0].pid and "optimize" in holder["command"]
    assert gate.held.wait(WAIT_S)  # mid-job: waiting on its first model request

    line = refusal(run("optimize", str(path), "--out", str(job), "--resume", cwd=tmp_path), first[0].pid)
    assert str(job) in line and "--out" in line
    refusal(run("optimize", str(path), cwd=tmp_path), first[0].pid)

    gate.opened.set()
    _, err = first[0].communicate(timeout=WAIT_S * 3)
    assert first[0].returncode == 0, err
    assert (job / "report.json").exists() and not (job / LOCK_NAME).exists()
    state = json.loads((job / "state.json").read_text())
    assert state["search_done"] and state["chosen"]


def test_a_second_run_on_the_same_run_directory_is_refused(tmp_path, stub, first):
    gate = Gate(FINISH)
    url = stub(gate).base_url
    args = ("run", SMOKE, "--base-url", url, "--model", "stub", "--json", "out.json")
    first.append(start(*args, cwd=tmp_path))
    assert gate.held.wait(WAIT_S)
    runs = list((tmp_path / "runs" / "smoke" / "runs").iterdir())
    assert len(runs) == 1
    assert holder_of(runs[0])["pid"] == first[0].pid

    line = refusal(run(*args, cwd=tmp_path), first[0].pid)
    assert str(runs[0].relative_to(tmp_path)) in line

    gate.opened.set()
    _, err = first[0].communicate(timeout=WAIT_S)
    assert first[0].returncode == 0, err
    assert json.loads((tmp_path / "out.json").read_text())["summary"]["tasks"] == 3
    records = (runs[0] / "episodes.jsonl").read_text().splitlines()
    assert len(records) == 3  # the refused process wrote no episode


# ---------------------------------------------------------------------------------------------- stale locks


def test_a_run_killed_with_sigkill_leaves_a_lock_that_the_rerun_takes_over(tmp_path, stub, first):
    gate = Gate(FINISH)
    url = stub(gate).base_url
    args = ("run", SMOKE, "--base-url", url, "--model", "stub", "--json", "out.json")
    first.append(start(*args, cwd=tmp_path))
    assert gate.held.wait(WAIT_S)
    (run_dir,) = (tmp_path / "runs" / "smoke" / "runs").iterdir()
    assert holder_of(run_dir)["pid"] == first[0].pid
    os.kill(first[0].pid, signal.SIGKILL)
    first[0].wait(WAIT_S)
    assert (run_dir / LOCK_NAME).exists()  # nobody cleaned up: the kernel only dropped the flock

    gate.opened.set()
    done = run(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"took over the lock of pid {first[0].pid}" in done.stderr
    assert json.loads((tmp_path / "out.json").read_text())["summary"]["tasks"] == 3
    assert not (run_dir / LOCK_NAME).exists()


def test_a_lock_of_a_killed_holder_is_taken_over_and_named(tmp_path, first):
    first.append(hold(tmp_path / "dir"))
    with pytest.raises(DirectoryBusy, match=f"pid {first[0].pid}"), exclusive(tmp_path / "dir"):
        pass
    first[0].send_signal(signal.SIGKILL)
    first[0].wait(WAIT_S)
    notes: list[str] = []
    with exclusive(tmp_path / "dir", log=notes.append):
        assert json.loads((tmp_path / "dir" / LOCK_NAME).read_text())["pid"] == os.getpid()
    assert len(notes) == 1 and f"pid {first[0].pid}" in notes[0] and "took over" in notes[0]


# ---------------------------------------------------------------------------------------------- in one process


def test_one_process_may_hold_a_directory_twice_and_keeps_it_until_the_outer_hold_ends(tmp_path, first):
    """`acon run` claims its run directory before starting anything; `run_tasks` claims it again to write."""
    with exclusive(tmp_path / "a"):
        with exclusive(tmp_path / "a"), exclusive(tmp_path / "b"):
            pass
        assert json.loads((tmp_path / "a" / LOCK_NAME).read_text())["pid"] == os.getpid()
        probe = subprocess.run(
            [sys.executable, "-c", HOLD, str(tmp_path / "a")], capture_output=True, text=True, timeout=WAIT_S
        )
        assert probe.returncode != 0 and f"pid {os.getpid()}" in probe.stderr
    assert not (tmp_path / "a").exists()


def test_a_directory_the_lock_created_is_removed_if_nothing_was_written(tmp_path):
    with exclusive(tmp_path / "new" / "runs" / "r1"):
        assert (tmp_path / "new" / "runs" / "r1" / LOCK_NAME).exists()
    assert not (tmp_path / "new").exists()
    with exclusive(tmp_path / "kept"):
        (tmp_path / "kept" / "episodes.jsonl").write_text("{}\n")
    assert os.listdir(tmp_path / "kept") == ["episodes.jsonl"]
    (tmp_path / "mine").mkdir()
    with exclusive(tmp_path / "mine"):
        pass
    assert (tmp_path / "mine").is_dir() and not os.listdir(tmp_path / "mine")


def test_a_lock_where_no_directory_can_be_made_is_a_config_error(tmp_path):
    (tmp_path / "file").write_text("")
    from optimizer.errors import ConfigError

    with pytest.raises(ConfigError, match="not writable"), exclusive(tmp_path / "file" / "job"):
        pass
