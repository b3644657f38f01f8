"""A one-round, tiny-budget `acon optimize` on the real embedded model (compressor and optimizer).

It must fail when the model's output is garbage: the optimizer's replies have to parse (a JSON list of
rules, possibly refused one by one for a stated reason), not only be recorded as failed calls. Whether
the local model writes a rule worth keeping is tested on its own in `test_llm_rules_local.py`.
"""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.llm


def test_one_round_job_on_the_local_model(run_cli, tmp_path):
    config = tmp_path / "tiny.toml"
    config.write_text(f"""
name = "e2e-tiny"
out = "{tmp_path / "job"}"
[suite]
type = "builtin"
max_output_tokens = 1300
[run]
agent = "reference"
[tracking]
enabled = false
[optimize]
warm_start = ["none", "offload_preview"]
train_limit = 3
test_limit = 1
[optimize.acon]
parents = 1
[optimize.budget]
rounds = 1
llm_screen_limit = 1
[optimize.selection]
confirm_top = 0
[optimize.report]
final_strategies = ["none", "offload_preview", "oracle"]
[endpoints.compressor]
model = "qwen2.5-coder-0.5b"
""")
    code, out, err = run_cli("optimize", str(config))
    assert code == 0, err[-2000:]
    report = json.loads((tmp_path / "job" / "report.json").read_text())
    assert len(report["rounds"]) == 1
    assert report["infrastructure"]["excluded_episodes"] == 0
    from optimizer.search.state import JobDir

    state = JobDir(tmp_path / "job").load_state()
    batches = [
        json.loads(p.read_text()) for p in (tmp_path / "job" / "rounds" / "01" / "proposals").glob("*-llm_rewrite.json")
    ]
    proposals = [p for batch in batches for p in batch]
    assert proposals, "the LLM proposer never ran (no pair or near miss to learn from)"
    parsed = [p for p in proposals if p["guideline"] is not None or p["error"].startswith("no usable rule")]
    assert parsed, f"no reply of the local model parsed: {[p['error'] for p in proposals]}"
    for candidate in (c for c in state.candidates.values() if c.llm):
        assert candidate.rejected or candidate.screens  # every proposal that became a guideline was screened
    assert report["budget"]["optimizer_tokens"] > 0
    assert "Test split" in out
