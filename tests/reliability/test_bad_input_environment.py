"""Bad input catalogue, continued: the machine and the files around a job. A full disk while an episode is
recorded, tracking URIs MLflow cannot use (from the environment or the config), and a job's `state.json`
with the wrong shapes: each one line, non-zero, nothing already written lost or torn."""

from __future__ import annotations

import errno
import json
import pathlib
import shutil
from pathlib import Path

import pytest

from optimizer.config import load_experiment
from optimizer.search.job import OptimizationJob
from tests.reliability.conftest import write_job

SMOKE = 'name = "x"\n[suite]\ntype = "smoke"\n[run]\nsplit = "all"\nagent = "reference"\n'


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # `acon run` writes under ./runs
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)


def _config(tmp: Path, text: str) -> str:
    path = tmp / "exp.toml"
    path.write_text(text)
    return str(path)


# ---------------------------------------------------------------------------------------------- a full disk


class FullDisk:
    """An `episodes.jsonl` handle on a disk that fills up after `room` more bytes: a write stores what fits,
    then fails with ENOSPC, as a real one does."""

    def __init__(self, handle, room: int) -> None:
        self._handle = handle
        self._room = room

    def write(self, data: bytes) -> int:
        fits = data[: self._room]
        self._handle.write(fits)
        self._handle.flush()
        self._room -= len(fits)
        if len(fits) < len(data):
            raise OSError(errno.ENOSPC, "No space left on device")
        return len(data)

    def __getattr__(self, name):
        return getattr(self._handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._handle.close()


def _fill_disk_after(monkeypatch, records: int) -> None:
    """The disk fills up after `records` more episode records: the next one is torn at byte 100."""
    real_open = pathlib.Path.open
    appended = []

    def open_(self, mode="r", *args, **kwargs):
        handle = real_open(self, mode, *args, **kwargs)
        if self.name != "episodes.jsonl" or "a" not in mode:
            return handle
        appended.append(self)
        return handle if len(appended) <= records else FullDisk(handle, 100)

    monkeypatch.setattr(pathlib.Path, "open", open_)


def _log(tmp: Path) -> Path:
    (log,) = (tmp / "runs").rglob("episodes.jsonl")
    return log


def test_a_full_disk_while_an_episode_is_recorded(run_cli, tmp_path, monkeypatch):
    path = _config(tmp_path, SMOKE + "[tracking]\nenabled = false\n")
    with monkeypatch.context() as full:
        _fill_disk_after(full, records=1)
        code, _, err = run_cli("run", path)
    errors = [line for line in err.splitlines() if "error" in line.lower() or "Traceback" in line]
    assert code == 1 and errors == [err.strip().splitlines()[-1]], err  # the run's progress line, then one error
    assert "episodes.jsonl" in errors[0] and "No space left on device" in errors[0]
    before = _log(tmp_path).read_bytes()
    assert len(before.splitlines()) == 1 and json.loads(before)  # one whole record, the torn part taken back
    code, _, err = run_cli("run", path)  # space again: the run resumes
    assert code == 0, err
    records = [json.loads(line) for line in _log(tmp_path).read_text().splitlines()]
    assert len(records) == 3 and records[0] == json.loads(before)  # the first episode was not run again


# ---------------------------------------------------------------------------------------------- tracking URIs


def test_a_tracking_uri_of_no_known_scheme_in_the_environment(fails, tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "garbage://x")
    path = _config(tmp_path, SMOKE)
    fails("run", path, "--limit", "1", says=("garbage://x", "MLFLOW_TRACKING_URI"))


def test_a_tracking_uri_of_no_known_scheme_in_the_config(fails, tmp_path):
    path = _config(tmp_path, SMOKE + '[tracking]\nuri = "garbage://x"\n')
    fails("run", path, "--limit", "1", says=("garbage://x", "[tracking] uri"))


def test_a_file_tracking_uri(run_cli, tmp_path):
    store = tmp_path / "mlruns"
    path = _config(tmp_path, SMOKE + f'[tracking]\nuri = "{store.as_uri()}"\ntraces = false\n')
    code, _, err = run_cli("run", path, "--limit", "1")
    lines = [line for line in err.splitlines() if line.startswith("acon: error")]
    # MLflow either keeps a file store there or refuses it; either way the answer is one line, never a traceback.
    assert (code == 0 and store.is_dir()) or (code == 2 and len(lines) == 1 and str(store) in lines[0]), err
    assert "Traceback" not in err


# ---------------------------------------------------------------------------------------------- state.json shapes


@pytest.fixture(scope="module")
def finished_state(tmp_path_factory, scripted_url) -> Path:
    tmp = tmp_path_factory.mktemp("done")
    path = write_job(tmp, scripted_url, train_limit=2, test_limit=1, acon={"llm_proposers": False})
    OptimizationJob(load_experiment(path), log=lambda m: None).run()
    return tmp


def _reshape(data: dict, key: str, value) -> dict:
    return {**data, key: value}


def _first_candidate(data: dict, value) -> dict:
    first = next(iter(data["candidates"]))
    return {**data, "candidates": {**data["candidates"], first: value}}


SHAPES = {
    "candidates_a_list": lambda d: _reshape(d, "candidates", list(d["candidates"].values())),
    "candidate_a_string": lambda d: _first_candidate(d, "a guideline"),
    "candidate_guideline_a_number": lambda d: _first_candidate(
        d, {**next(iter(d["candidates"].values())), "guideline": 7}
    ),
    "rounds_of_strings": lambda d: _reshape(d, "rounds", ["one"]),
    "tokens_a_word": lambda d: _reshape(d, "optimizer_tokens", "many"),
    "chosen_a_list": lambda d: _reshape(d, "chosen", ["v1"]),
    "step_tokens_a_number": lambda d: _reshape(d, "step_tokens", 5),
}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("command", ["export", "optimize"])
def test_state_json_of_the_wrong_shape(fails, finished_state, tmp_path, shape, command):
    shutil.copytree(finished_state / "job", tmp_path / "job")
    config = (finished_state / "job.toml").read_text().replace(str(finished_state / "job"), str(tmp_path / "job"))
    (tmp_path / "job.toml").write_text(config)
    state = tmp_path / "job" / "state.json"
    state.write_text(json.dumps(SHAPES[shape](json.loads(state.read_text()))))
    args = ("export", str(tmp_path / "job"), "--out", str(tmp_path / "g.md"))
    if command == "optimize":
        args = ("optimize", str(tmp_path / "job.toml"), "--resume")
    fails(*args, says=(str(state), "damaged"))
