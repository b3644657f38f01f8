"""A one-round, tiny-budget `acon optimize` on the real embedded model (compressor and optimizer)."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.llm


def test_one_round_job_on_the_local_model(run_cli, tmp_path):
    config = tmp_path / "tiny.toml"
    config.write_text(f"""
name = "e2e-tiny"
out = "{tmp_path / 'job'}"
[suite]
type = "builtin"
max_output_tokens = 1300
[run]
agent = "reference"
[tracking]
enabled = false
[optimize]
rounds = 1
candidates = 1
diagnose = 1
train_limit = 1
test_limit = 1
confirm_top = 0
final_strategies = ["none"]
""")
    code, out, err = run_cli("optimize", str(config))
    assert code == 0, err[-2000:]
    report = json.loads((tmp_path / "job" / "report.json").read_text())
    assert len(report["rounds"]) == 1
    assert report["infrastructure"]["excluded_episodes"] == 0
    state = json.loads((tmp_path / "job" / "state.json").read_text())
    origins = {c["origin"] for c in state["candidates"].values()}
    assert "tighten" in origins  # the CO step ran on the real model's compressed episodes
    # The DSPy programs ran on the local model (UT after a pair, or CO after a compressed success).
    assert report["budget"]["optimizer_tokens"] > 0
    assert "Test split" in out
