from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import ROOT, scripted

SMOKE = str(ROOT / "experiments" / "smoke.toml")


def write_config(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(body)
    return path


def test_run_with_reference_agent_writes_the_json_interface(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("run", SMOKE, "--agent", "reference", "--json", str(tmp_path / "out.json"))
    assert code == 0, err
    data = json.loads((tmp_path / "out.json").read_text())
    assert data["summary"]["success"] == 1.0 and data["summary"]["tasks"] == 3
    for row in data["episodes"]:
        assert {
            "task_id",
            "success",
            "outcome",
            "steps",
            "peak_tokens",
            "dependency",
            "total_tokens",
            "cost",
            "wall_s",
        } <= set(row)
        assert row["peak_tokens"] > 0
    assert "success" in out


def test_run_against_a_second_server_given_by_url(run_cli, tmp_path, monkeypatch, stub):
    monkeypatch.chdir(tmp_path)
    replies = [json.dumps({"tool": "finish", "arguments": {"answer": "shipped 42.5 RF-0001-3003"}})]
    server = stub(scripted(replies))
    code, _, err = run_cli(
        "run", SMOKE, "--base-url", server.base_url, "--model", "any-model", "--json", str(tmp_path / "out.json")
    )
    assert code == 0, err
    data = json.loads((tmp_path / "out.json").read_text())
    assert data["summary"]["tasks"] == 3
    assert all(r["outcome"] in ("success", "failure") for r in data["episodes"])
    assert server.requests and all(r["model"] == "any-model" for r in server.requests)


def test_unknown_config_key_exits_2_naming_the_key(run_cli, tmp_path):
    path = write_config(tmp_path, 'name = "x"\n[suite]\ntype = "smoke"\n[run]\nlimt = 2\n')
    code, _, err = run_cli("run", str(path))
    assert code == 2
    assert err.count("\n") == 1 and "run.limt" in err
    assert not (tmp_path / "runs").exists()


def test_wrong_type_and_missing_file_exit_2(run_cli, tmp_path):
    path = write_config(tmp_path, 'name = "x"\n[suite]\ntype = "smoke"\n[run]\nlimit = "many"\n')
    code, _, err = run_cli("run", str(path))
    assert code == 2 and "run.limit" in err
    code, _, err = run_cli("run", str(tmp_path / "nope.toml"))
    assert code == 2 and "not found" in err


def test_invalid_toml_exits_2(run_cli, tmp_path):
    path = write_config(tmp_path, 'name = "x\n')
    code, _, err = run_cli("run", str(path))
    assert code == 2 and "invalid TOML" in err


def test_unreachable_endpoint_is_one_line_and_nonzero(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("run", SMOKE, "--base-url", "http://127.0.0.1:9/v1")
    assert code == 3
    assert "not answering" in err and err.strip().count("\n") == 0


def test_rerun_resumes_without_redoing_episodes(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run_cli("run", SMOKE, "--agent", "reference")[0] == 0
    log = next(Path("runs").rglob("episodes.jsonl"))
    lines = log.read_text().splitlines()
    assert run_cli("run", SMOKE, "--agent", "reference")[0] == 0
    assert log.read_text().splitlines() == lines


def test_an_unpinned_guideline_runs_only_under_the_override_and_says_so(run_cli, tmp_path, monkeypatch, scripted_url):
    monkeypatch.chdir(tmp_path)
    unpinned = ROOT / "guidelines" / "examples" / "unpinned.md"
    endpoint = f'base_url = "{scripted_url}"\nmodel = "scripted"\nbackoff_s = 0.0\n'
    body = (
        f'name = "x"\n[suite]\ntype = "smoke"\n[run]\nagent = "reference"\n[tracking]\nenabled = false\n'
        f'[strategy]\ntype = "guideline"\nguideline = "{unpinned}"\nallow_unpinned = true\n'
        f"[endpoints.compressor]\n{endpoint}"
    )
    code, _, err = run_cli("run", str(write_config(tmp_path, body)), "--limit", "1")
    assert code == 0, err
    assert "contract override (set allow_unpinned)" in err and "skill unpinned" in err


def test_a_run_whose_every_episode_failed_on_the_endpoint_exits_nonzero(run_cli, tmp_path, monkeypatch, stub):
    # The endpoint answers the health probe but never a request (an empty reply each time): no episode scored.
    monkeypatch.chdir(tmp_path)
    server = stub(lambda request: {"content": None})
    json_path = tmp_path / "out.json"
    code, _, err = run_cli("run", SMOKE, "--base-url", server.base_url, "--json", str(json_path))
    assert code == 3, err
    error = err.strip().splitlines()[-1]
    assert error.startswith("acon: error: ") and "every episode" in error and "3 of 3" in error
    # The work done is stored: the episodes (to resume) and the JSON interface.
    data = json.loads(json_path.read_text())
    assert [r["outcome"] for r in data["episodes"]] == ["infra_error"] * 3
    assert "episodes.jsonl" in error


def test_a_run_of_zero_tasks_is_refused(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for command in ("run", "compare"):
        code, _, err = run_cli(command, SMOKE, "--agent", "reference", "--limit", "0")
        assert code == 2, err
        assert err.strip().count("\n") == 0 and "--limit" in err and "at least 1" in err
    assert not (tmp_path / "runs").exists()


def test_a_comparison_with_a_strategy_that_scored_nothing_exits_nonzero(run_cli, tmp_path, monkeypatch, stub):
    monkeypatch.chdir(tmp_path)
    server = stub(lambda request: {"content": None})
    code, out, err = run_cli("compare", SMOKE, "--strategies", "none,fifo", "--base-url", server.base_url)
    assert code == 3, err
    assert "fifo" in out  # the table is printed first: every row is on the record
    assert err.strip().splitlines()[-1].startswith("acon: error: every episode of none failed on the endpoint")
