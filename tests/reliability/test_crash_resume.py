"""SIGKILL `acon optimize` at seeded points, resume until it finishes: the same job as one run straight through.

The scripted models run in this process, so a kill can land exactly while the job waits on a model call
(its k-th compressor or optimizer call); one more kill lands a seeded delay after a resumed process starts
working, wherever that is (an episode, a checkpoint write, an MLflow write). Between two attempts a half-written episode
line and a truncated JSON checkpoint are planted, as a crash mid-write would leave them: both must be
redone, never read. The finished job must equal an uninterrupted run of the same config: candidates,
pairs per round, chosen version, budget, episodes per run directory (none lost, none duplicated), and
MLflow runs and registered prompt versions (none lost, none duplicated).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from optimizer.config import load_experiment
from optimizer.search.job import OptimizationJob
from optimizer.testing.scripted import scripted_models
from optimizer.testing.stub_server import StubServer
from tests.conftest import ROOT
from tests.reliability.conftest import eager_guideline, episode_lines, write_job

SEED = 20251002
ATTEMPTS = 8  # launches before the test gives up on the job finishing


class Killer:
    """The scripted models, able to SIGKILL the job process at its k-th call of one role, or `delay` after
    its first compressor call (the process is then past its start-up, into the job's work)."""

    def __init__(self) -> None:
        self.roles: list[str] = []
        self.pid: int | None = None
        self.role: str | None = None
        self.at = 0
        self.delay: float | None = None
        self.events: list[str] = []
        self._lock = threading.Lock()

    def arm(self, pid: int, *, role: str | None = None, at: int = 0, delay: float | None = None) -> None:
        with self._lock:
            self.pid, self.role, self.at, self.delay = pid, role, at, delay

    def __call__(self, request: dict[str, Any]) -> str:
        role = _role(request)
        with self._lock:
            self.roles.append(role)
            if self.pid is not None and role == self.role:
                self.at -= 1
                if self.at == 0:
                    self._kill(f"a {role} (request {len(self.roles)})")
            elif self.pid is not None and self.delay is not None and role == "compressor call":
                threading.Timer(self.delay, self._kill_later, args=(self.pid, self.delay)).start()
                self.delay = None
        return scripted_models(request)

    def _kill(self, what: str) -> None:
        os.kill(self.pid, signal.SIGKILL)
        self.events.append(f"SIGKILL at {what}")
        self.pid = self.role = None

    def _kill_later(self, pid: int, delay: float) -> None:
        with self._lock:
            if self.pid == pid:
                self._kill(f"{delay:.2f} s after the process's first compressor call")


def _role(request: dict[str, Any]) -> str:
    text = json.dumps(request.get("messages", []))
    if "compress the working context" in text:
        return "compressor call"
    return "optimizer call" if "[[ ## " in text else "probe"


def _launch(config: Path, env: dict[str, str], resume: bool) -> subprocess.Popen:
    code = "from optimizer.cli import main; main()"
    args = [sys.executable, "-c", code, "optimize", str(config), *(["--resume"] if resume else [])]
    return subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _damage(job: Path) -> list[str]:
    """What a crash in the middle of two writes would leave: a torn episode line, a truncated JSON file."""
    done = []
    logs = sorted((job / "runs").glob("*/episodes.jsonl"), key=lambda p: p.stat().st_mtime_ns)
    logs = [p for p in logs if p.read_text().strip()]
    if logs:
        lines = logs[-1].read_text().splitlines(keepends=True)
        logs[-1].write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])
        done.append(f"tore the last line of {logs[-1].parent.name}/episodes.jsonl")
    checkpoints = [*job.glob("rounds/*/proposals/*.json"), *job.glob("runs/*/meta.json")]
    if checkpoints:
        newest = max(checkpoints, key=lambda p: p.stat().st_mtime_ns)
        newest.write_text(newest.read_text()[: len(newest.read_text()) // 2])
        done.append(f"truncated {newest.relative_to(job)}")
    return done


def _unfinished_replies(tmp: Path) -> int:
    """Cached compressor replies fetched by an episode that has no record yet (a killed attempt)."""
    db = sqlite3.connect(tmp / "home" / "cache" / "replies.sqlite")
    try:
        origins = [row[0] for row in db.execute("SELECT origin FROM replies WHERE origin IS NOT NULL")]
    finally:
        db.close()
    unfinished = 0
    for origin in origins:
        directory, task = origin.rsplit("#", 1)[0].rsplit("::", 1)
        unfinished += task not in {r["task_id"] for r in _records(Path(directory) / "episodes.jsonl")}
    return unfinished


def _records(log: Path) -> list[dict[str, Any]]:
    """The complete records of an episode log, without repairing it (a kill may have torn the last line)."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines(keepends=True) if line.endswith("\n")]


def _outcome(job: Path) -> dict[str, Any]:
    """Everything the two runs must agree on."""
    from optimizer.search.state import JobDir

    report = json.loads((job / "report.json").read_text())
    state = JobDir(job).load_state()
    runs = episode_lines(job)
    return {
        "candidates": sorted(state.candidates),
        "screened": sorted(v for v, c in state.candidates.items() if c.screens),
        "rejected": sorted(v for v, c in state.candidates.items() if c.rejected is not None),
        "rounds": [(r["round"], r["pairs"], r["screened"], r["best"], r["improved"]) for r in report["rounds"]],
        "chosen": report["chosen"]["version"],
        "budget": report["budget"],
        "infrastructure": report["infrastructure"],
        "stopped": report["stopped"],
        "test": [(r["strategy"], r["tasks"], r["success"], r["peak_tokens_mean"]) for r in report["rows"]],
        "episodes": {run: sorted((r["task_id"], r["outcome"]) for r in records) for run, records in runs.items()},
    }


def _mlflow(job: Path) -> tuple[Counter, int]:
    """Runs per `acon.key` (or job name) and registered prompt versions of the job's store."""
    from mlflow import MlflowClient

    from optimizer.tracking import resolve_uri
    from optimizer.tracking.parent_runs import ParentRuns

    uri = resolve_uri(job)
    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    runs = client.search_runs([ParentRuns.read(job).experiment_id], max_results=5000)
    keys = Counter(r.data.tags.get("acon.key", r.data.tags.get("acon.job")) for r in runs)
    prompts = len(client.search_prompt_versions("acon-reliability-history", max_results=1000))
    return keys, prompts


@pytest.fixture(scope="module")
def runs(tmp_path_factory, migrated_db):
    killer = Killer()
    with StubServer(killer) as url:
        # The uninterrupted run, in this process, with its own reply cache.
        straight = tmp_path_factory.mktemp("straight")
        config = load_experiment(write_job(straight, url, tracking=True, guideline=eager_guideline(straight)))
        (straight / "job").mkdir()
        shutil.copy(migrated_db, straight / "job" / "mlflow.db")
        with pytest.MonkeyPatch.context() as patch:
            # MLflow exports the tracking URI it is given to the environment; keep it out of later tests.
            for name in ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI"):
                patch.delenv(name, raising=False)
            patch.setenv("ACON_HOME", str(straight / "home"))
            from optimizer.tracking import tracker_for

            OptimizationJob(config, log=lambda m: None).run(track=lambda: tracker_for(config))
        roles = Counter(killer.roles)

        # The same job, killed and resumed in fresh processes: first while it waits on a compressor call
        # (after the first, so an episode may already have cached replies), then on an optimizer call, then
        # a seeded delay into a process's work.
        crashed = tmp_path_factory.mktemp("crashed")
        path = write_job(crashed, url, tracking=True, guideline=eager_guideline(crashed))
        (crashed / "job").mkdir()
        shutil.copy(migrated_db, crashed / "job" / "mlflow.db")
        env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
        env.update(ACON_HOME=str(crashed / "home"), PYTHONPATH=str(ROOT))
        rng = random.Random(SEED)
        # The first kill lands on the last compressor call before the job's first optimizer call: late in an
        # episode that already has cached replies, and early enough that the second kill has an optimizer
        # call to land on.
        before_optimizer = killer.roles[: killer.roles.index("optimizer call")].count("compressor call")
        assert before_optimizer >= 2, killer.roles
        points = [
            {"role": "compressor call", "at": before_optimizer},
            {"role": "optimizer call", "at": rng.randint(1, roles["optimizer call"])},
            {"delay": round(rng.uniform(0.2, 1.5), 2)},
        ]
        log: list[str] = []
        leftovers = 0
        finished = False
        for attempt in range(ATTEMPTS):
            process = _launch(path, env, resume=attempt > 0)
            point = points[attempt] if attempt < len(points) else {}
            killer.arm(process.pid, **point)
            _, stderr = process.communicate(timeout=300)
            if process.returncode == 0:
                finished = True
                break
            assert process.returncode == -signal.SIGKILL, stderr[-3000:]
            log.append(killer.events[-1])
            leftovers += _unfinished_replies(crashed)
            if attempt == 1:
                log += _damage(crashed / "job")
        assert finished, log
        yield straight / "job", crashed / "job", log, leftovers


def test_kill_points_were_reached(runs):
    _, _, log, leftovers = runs
    kills = [line for line in log if line.startswith("SIGKILL")]
    assert len(kills) == 3, log
    assert "compressor call" in kills[0] and "optimizer call" in kills[1], log
    assert any(line.startswith("tore") for line in log) and any(line.startswith("truncated") for line in log)
    assert leftovers > 0  # a killed episode had cached replies: its redo must account them as its own calls


def test_resumed_job_equals_the_uninterrupted_one(runs):
    straight, crashed, log, _ = runs
    assert _outcome(crashed) == _outcome(straight), log


def test_no_episode_is_lost_or_duplicated(runs):
    straight, crashed, _, _ = runs
    for run, records in episode_lines(crashed).items():
        tasks = [r["task_id"] for r in records]
        assert len(tasks) == len(set(tasks)), run  # the torn line was dropped, its episode written once
        meta = json.loads((crashed / "runs" / run / "meta.json").read_text())  # a truncated one was rewritten
        assert meta == json.loads((straight / "runs" / run / "meta.json").read_text()), run
    assert sorted(episode_lines(crashed)) == sorted(episode_lines(straight))


def test_no_mlflow_run_or_prompt_version_is_lost_or_duplicated(runs):
    straight, crashed, log, _ = runs
    keys, prompts = _mlflow(crashed)
    expected, expected_prompts = _mlflow(straight)
    assert max(keys.values()) == 1, [k for k, n in keys.items() if n > 1]
    assert keys == expected, log
    assert prompts == expected_prompts
