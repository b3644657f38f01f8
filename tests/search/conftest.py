from __future__ import annotations

from pathlib import Path

import pytest

from optimizer.config import ExperimentConfig, load_experiment
from optimizer.testing.scripted import scripted_models
from optimizer.testing.stub_server import StubServer


@pytest.fixture(scope="module")
def scripted_url():
    with StubServer(scripted_models) as url:
        yield url


def job_config(tmp: Path, url: str, **optimize) -> ExperimentConfig:
    endpoint = f'base_url = "{url}"\nmodel = "scripted"\nbackoff_s = 0.0\n'
    settings = {"rounds": 2, "candidates": 1, "diagnose": 1, "train_limit": 4, "test_limit": 4, "confirm_top": 0,
                "final_strategies": ["none", "fifo"], **optimize}
    lines = [f"{k} = {v!r}".replace("'", '"') if not isinstance(v, list) else f"{k} = {v!r}".replace("'", '"')
             for k, v in settings.items()]
    text = "\n".join([
        'name = "scripted-job"', f'out = "{tmp / "job"}"', "[suite]", 'type = "builtin"', "[run]",
        'agent = "reference"', "[tracking]", "enabled = false", "[optimize]", *lines,
        "[endpoints.agent]", endpoint, "[endpoints.compressor]", endpoint, "[endpoints.optimizer]", endpoint,
    ])
    path = tmp / "job.toml"
    path.write_text(text.replace("True", "true").replace("False", "false"))
    return load_experiment(path)
