"""The planted failure: an unpinned skill loses RULE-MID-02 in a summary; `acon diff` says so exactly."""

from __future__ import annotations

import json

from tests.conftest import ROOT


def test_acon_diff_names_the_lost_rule_its_class_checkpoint_and_step(run_cli, tmp_path, scripted_url):
    config = (ROOT / "experiments" / "planted_rule.toml").read_text()
    endpoint = f'base_url = "{scripted_url}"\nmodel = "scripted"\nbackoff_s = 0.0\n'
    config = config.replace('name = "planted_rule"', f'name = "planted_rule"\nout = "{tmp_path / "job"}"')
    config += f"\n[tracking]\nenabled = false\n[endpoints.compressor]\n{endpoint}[endpoints.optimizer]\n{endpoint}"
    path = tmp_path / "planted.toml"
    path.write_text(config)
    code, _, err = run_cli("optimize", str(path))
    assert code == 0, err

    code, out, err = run_cli("diff", str(tmp_path / "job"), "--json", str(tmp_path / "diff.json"))
    assert code == 0, err
    pairs = json.loads((tmp_path / "diff.json").read_text())["pairs"]
    [pair] = pairs
    rule = next(f for f in pair["missing"] if f["literal"] == "RULE-MID-02")
    assert (rule["kind"], rule["retention"], rule["behaviour"]) == ("rule", "skill", "skip")
    assert rule["checkpoint"] == 3 and rule["checkpoint_name"] == "history as replayed"
    assert rule["step"] == pair["divergence_step"] == 2
    assert rule["record"]["action"] == "summarize"
    assert "RULE-MID-02" in out and "skill" in out
    assert any("RULE-MID-02" in b for b in pair["blocking"])

    from optimizer.search.state import JobDir

    state = JobDir(tmp_path / "job").load_state()
    patches = [c for c in state.candidates.values() if c.origin == "patch"]
    assert patches and all("pin skill" in c.rationale for c in patches)
    assert state.candidates[state.chosen].screens["train"].success == 1.0
