"""`acon compare` on guideline files and registry aliases, with recalls, cache breaks and cost per success;
`acon diff` on its JSON (tier 0, the reference agent: no model)."""

from __future__ import annotations

import json
from pathlib import Path

from optimizer.context.guideline import read_guideline
from tests.conftest import ROOT

# Masks every old result for good (no recall, not even the first one): a task needing an early value fails.
FORGETFUL = """---
name: forgetful
description: masks every result but the latest, unrecoverably
policy:
  pinned: [skill, write_receipt]
  write: []
  history:
    - {move: mask, keep_last: 1, keep_first: false, recoverable: false, over: 0}
---
## History compressor

Summarize.

## Observation compressor

Compress.
"""
CONFIG = """name = "cmp"
[suite]
type = "builtin"
[run]
agent = "reference"
split = "train"
[tracking]
enabled = false
"""


def register(job_dir, guideline) -> None:
    from optimizer.tracking.mlflow_tracker import MlflowTracker
    from optimizer.tracking.store import job_store

    tracker = MlflowTracker(job_store(job_dir), job_dir, "learned")
    with tracker.job_run("optimize", params={}, tags={}):
        tracker.register_guideline(guideline)
        tracker.set_best(guideline)
    tracker.flush()


def test_compare_takes_a_guideline_file_and_an_alias_and_diff_reads_its_json(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "exp.toml").write_text(CONFIG)
    (tmp_path / "forgetful.md").write_text(FORGETFUL)
    learned = read_guideline(ROOT / "guidelines" / "learned" / "builtin.md")
    register(tmp_path / "job", learned)
    strategies = "none,forgetful.md,acon-learned@best"
    code, out, err = run_cli(
        "compare", "exp.toml", "--strategies", strategies, "--registry", "job", "--limit", "4", "--json", "cmp.json"
    )
    assert code == 0, err
    data = json.loads((tmp_path / "cmp.json").read_text())
    rows = {r["strategy"]: r for r in data["rows"]}
    forgetful = f"guideline:forgetful@{read_guideline(tmp_path / 'forgetful.md').version}"
    assert list(rows) == ["none", forgetful, f"guideline:{learned.name}@{learned.version}"]
    for row in rows.values():
        assert row["tasks"] == 4 and isinstance(row["cache_breaks"], int) and isinstance(row["recall_calls"], int)
        assert row["cost_source"] == "projected (openai-gpt-4.1-2025-04)" and row["cost_per_success"] > 0
    assert rows["none"]["cache_breaks"] == 0  # full context only appends: the cached prefix always holds
    assert rows[forgetful]["cache_breaks"] > 0 and rows[forgetful]["success"] < 1.0
    for column in ("recalls", "cache breaks", "cost/suc", "cost/success: projected (openai-gpt-4.1-2025-04)"):
        assert column in out

    code, out, err = run_cli("diff", "cmp.json", "--json", "diff.json")
    assert code == 0, err
    by_strategy = {s["strategy"]: s["pairs"] for s in json.loads((tmp_path / "diff.json").read_text())["strategies"]}
    assert set(by_strategy) == set(rows) - {"none"}
    failed = {task_id for task_id, e in summaries(rows[forgetful]).items() if not e.success}
    assert failed and {p["task_id"] for p in by_strategy[forgetful]} == failed
    masked = [f for p in by_strategy[forgetful] for f in p["missing"] if f["record"]]
    assert masked and all(f["record"]["action"] == "mask" and f["checkpoint"] == 3 for f in masked)
    assert "`none` solved and it failed" in out and masked[0]["literal"] in out


def summaries(row: dict) -> dict:
    from optimizer.evaluate.store import EpisodeStore

    return EpisodeStore(Path(row["directory"])).index()[1]


def test_compare_and_diff_refuse_what_they_cannot_read_in_one_line(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "exp.toml").write_text(CONFIG)
    code, _, err = run_cli("compare", "exp.toml", "--strategies", "none,missing.md")
    assert code == 2 and err.count("\n") == 1 and "guideline file not found: missing.md" in err
    code, _, err = run_cli("compare", "exp.toml", "--strategies", "none,acon-x@best")
    assert code == 2 and err.count("\n") == 1 and "name the store with --registry" in err
    (tmp_path / "other.json").write_text('{"rows": []}')
    code, _, err = run_cli("diff", "other.json")
    assert code == 2 and err.count("\n") == 1 and "not the JSON of `acon compare --json`" in err
    no_none = {
        "experiment": "cmp",
        "split": "train",
        "agent": "reference",
        "rows": [{"strategy": "fifo", "directory": "runs/x", "task_ids": []}],
    }
    (tmp_path / "cmp.json").write_text(json.dumps(no_none))
    code, _, err = run_cli("diff", "cmp.json")
    assert code != 0 and "ran no `none` (fifo)" in err


def test_diff_prints_markup_in_a_guideline_name_as_written(run_cli, tmp_path, monkeypatch):
    # A guideline's name is file text: `acon diff` shows it in its headings, and rich must not parse it.
    monkeypatch.chdir(tmp_path)
    name = "[/oops] [bold]x[/bold] :smile:"
    (tmp_path / "exp.toml").write_text(CONFIG)
    (tmp_path / "marked.md").write_text(FORGETFUL.replace("name: forgetful", f"name: {name!r}", 1))
    code, _, err = run_cli("compare", "exp.toml", "--strategies", "none,marked.md", "--limit", "4", "--json", "c.json")
    assert code == 0, err
    code, out, err = run_cli("diff", "c.json")
    assert code == 0 and "Traceback" not in err, err
    assert name in out and "`none` solved and it failed" in out
