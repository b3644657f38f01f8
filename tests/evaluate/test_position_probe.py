"""The position probe scores the order of calls, separates "not followed" from "content lost", and resumes."""

from __future__ import annotations

import json

import pytest

from optimizer.errors import ConfigError
from optimizer.evaluate.endpoints import ModelEndpoints
from optimizer.evaluate.position_probe import RULE, ProbeLog, Trial, run_probe, skill_text, summarize
from optimizer.llm.endpoint import EndpointConfig


def head_reader(request: dict) -> str:
    """A model that reads only the first three lines of a skill: it follows a rule at the head, no other."""
    text = "\n".join(str(m.get("content") or "") for m in request["messages"])
    if "Tool result of read_skill" not in text:
        return json.dumps({"tool": "read_skill", "arguments": {"name": "refunds"}})
    skill = text.split("Tool result of read_skill:\n", 1)[1]
    seen = "\n".join(skill.splitlines()[:3])
    if RULE in seen and "Tool result of check_fraud_score" not in text:
        return json.dumps({"tool": "check_fraud_score", "arguments": {"order_id": "ORD-4410"}})
    if "Tool result of issue_refund" not in text:
        return json.dumps({"tool": "issue_refund", "arguments": {"order_id": "ORD-4410", "amount": 40.0}})
    return json.dumps({"tool": "finish", "arguments": {"answer": "RF-4410"}})


def _run(stub, tmp_path, repeats=2):
    server = stub(head_reader)
    config = EndpointConfig(base_url=server.base_url, model="stub", backoff_s=0.0)
    seeds: list[int] = []

    def endpoints_for(seed: int) -> ModelEndpoints:
        seeds.append(seed)
        return ModelEndpoints(
            {"agent": config.model_copy(update={"seed": seed, "temperature": 0.3})}, log=lambda _: None
        )

    log = ProbeLog(tmp_path / "trials.jsonl")
    return run_probe(endpoints_for, log, repeats=repeats), seeds, server


def test_compliance_follows_where_the_model_reads(stub, tmp_path):
    trials, seeds, server = _run(stub, tmp_path)
    assert seeds == [1, 2] * 8  # cell by cell, seeds innermost
    assert {r["seed"] for r in server.requests} == {1, 2}  # each trial samples with its own seed
    rows = {(r["length"], r["position"]): r for r in summarize(trials)}
    assert rows[("short", "head")]["compliance"] == 1.0 and rows[("long", "head")]["compliance"] == 1.0
    for length in ("short", "long"):
        for position in ("middle", "tail", "absent"):
            assert rows[(length, position)]["compliance"] == 0.0, (length, position)
        assert rows[(length, "middle")]["present"] == 2  # present and not followed: behaviour, not data flow
    assert rows[("long", "head")]["skill_tokens"] > 5 * rows[("short", "head")]["skill_tokens"]


def test_a_rerun_resumes_without_calling_the_model_again(stub, tmp_path):
    first, _, server = _run(stub, tmp_path)
    calls = len(server.requests)
    again, seeds, server2 = _run(stub, tmp_path)
    assert again == first and seeds == [] and server2.requests == []
    assert calls > 0


def test_a_trial_whose_request_lacks_the_rule_is_content_lost_not_disobedience():
    trials = [Trial("short", "middle", 1, 200, present=False, wrote=True, complied=False, calls=("issue_refund",))]
    row = summarize(trials)[0]
    assert row["content_lost"] == 1 and row["compliance"] is None


def test_the_rule_sits_where_it_is_placed():
    for length in ("short", "long"):
        lines = skill_text(length, "middle").splitlines()
        assert lines.index(RULE) in range(len(lines) // 2 - 1, len(lines) // 2 + 2)
        assert skill_text(length, "head").splitlines()[1] == RULE
        assert skill_text(length, "tail").splitlines()[-1] == RULE
        assert RULE not in skill_text(length, "absent")


def test_a_broken_trial_log_is_one_line(tmp_path):
    path = tmp_path / "trials.jsonl"
    path.write_text('{"length": "short"\n')
    with pytest.raises(ConfigError, match=r"trials\.jsonl:1: not a probe trial"):
        ProbeLog(path)


def test_the_cli_refuses_an_unknown_length_and_a_broken_log_in_one_line(run_cli, tmp_path):
    code, _, err = run_cli("probe", "position", "--lengths", "medium", "--log", str(tmp_path / "t.jsonl"))
    assert code == 2 and err.strip().splitlines() == ["acon: error: --lengths: unknown ['medium']; known: short, long"]
    broken = tmp_path / "broken.jsonl"
    broken.write_text("not json\n")
    code, _, err = run_cli("probe", "position", "--log", str(broken), "--base-url", "http://127.0.0.1:9/v1")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "not a probe trial" in err
    assert broken.read_text() == "not json\n"  # nothing already there is overwritten
