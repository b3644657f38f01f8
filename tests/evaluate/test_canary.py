"""The canary probe: fixed conversation, every strategy, identifiers per checkpoint, token reduction."""

from __future__ import annotations

import json

import pytest

from optimizer.context.strategies import STRATEGY_NAMES, parse_strategy
from optimizer.evaluate import canary
from tests.context.conftest import lossy, stub_client

RULES = ("RULE-HEAD-01", "RULE-MID-02", "RULE-TAIL-03")
RECEIPT_IDS = ("PO-5521",)


@pytest.fixture(scope="module")
def report():
    """All eight strategies; LLM ones over a compressor that keeps nothing (only code keeps things)."""
    from optimizer.context.compressor import Compressor
    from optimizer.testing.stub_server import StubServer

    with StubServer(lossy) as url:
        strategies = {n: parse_strategy(n) for n in STRATEGY_NAMES}
        yield canary.run_canary(strategies, compressor=Compressor(stub_client(url)))


def surviving(report, name: str, checkpoint: int = 5) -> set[str]:
    return set(report.results[name].checkpoints[checkpoint].surviving)


def test_the_conversation_plants_every_identifier_in_the_class_it_names():
    episode = canary.run_canary({}).results["none"].episode
    for identifier, retention in canary.IDENTIFIERS.items():
        results = [e for e in episode.entries if e["kind"] == "result"]
        holders = [e for e in results if identifier in episode.text(e["raw"])]
        assert [e["retention"] for e in holders] == [retention.value], identifier
    skill = canary.SKILL_MD.splitlines()
    positions = [next(i for i, line in enumerate(skill) if rule in line) / len(skill) for rule in RULES]
    assert positions[0] < 0.1 and 0.4 < positions[1] < 0.6 and positions[2] > 0.9
    catalog = canary.CATALOG_GUIDE
    assert 0.4 < catalog.index("FACT-STATIC-77") / len(catalog) < 0.6


def test_every_strategy_replays_the_same_calls_and_sees_everything_raw(report):
    calls = {
        name: [(c["name"], c["arguments"]) for c in result.episode.tool_calls]
        for name, result in report.results.items()
    }
    assert len({json.dumps(c) for c in calls.values()}) == 1
    assert len(calls["none"]) == len(canary.REFERENCE)
    for name, result in report.results.items():
        assert result.episode.outcome == "success", (name, result.episode.reasons)
        assert surviving(report, name, 1) == set(canary.IDENTIFIERS), name


def test_none_keeps_everything_and_is_the_reference_for_reduction(report):
    none = report.results["none"]
    assert none.reduction == 0.0
    assert all(surviving(report, "none", n) == set(canary.IDENTIFIERS) for n in range(1, 6))
    assert none.checkpoints[5].tokens > 6000


def test_the_seed_guideline_keeps_rules_and_receipts_and_cuts_at_least_40_percent(report):
    guideline = report.results["guideline"]
    assert set(RULES + RECEIPT_IDS) <= surviving(report, "guideline")
    assert guideline.reduction >= 0.4
    assert guideline.label.startswith("guideline:seed@")


@pytest.mark.parametrize("name", ["fifo", "mask_last_n"])
def test_window_strategies_visibly_lose_identifiers(report, name):
    lost = set(canary.IDENTIFIERS) - surviving(report, name)
    assert lost, f"{name} kept every identifier"
    assert "FACT-STATIC-77" in lost
    # ...where the content they sit in is dropped from the view: checkpoint 3.
    assert report.results[name].lost_at("FACT-STATIC-77") == 3


def test_acon_history_without_pinning_loses_the_rules_to_a_lossy_compressor(report):
    assert not set(RULES) & surviving(report, "llm_history")
    assert report.results["llm_history"].lost_at("RULE-MID-02") == 3
    assert set(RECEIPT_IDS) <= surviving(report, "llm_history")  # must-keep lines are restored in code


def test_write_time_strategies_lose_at_checkpoint_2(report):
    assert report.results["offload_preview"].lost_at("FACT-STATIC-77") == 2


def test_json_has_exactly_the_documented_shape(report):
    data = json.loads(json.dumps(report.to_json()))
    assert set(data) == {"identifiers", "strategies"}
    assert data["identifiers"] == list(canary.IDENTIFIERS)
    assert list(data["strategies"]) == list(STRATEGY_NAMES)
    none_tokens = data["strategies"]["none"]["checkpoints"]["5"]["tokens"]
    for entry in data["strategies"].values():
        assert set(entry) == {"reduction", "checkpoints"} and isinstance(entry["reduction"], float)
        assert list(entry["checkpoints"]) == ["1", "2", "3", "4", "5"]
        for checkpoint in entry["checkpoints"].values():
            assert set(checkpoint) == {"surviving", "tokens"} and isinstance(checkpoint["tokens"], int)
            assert set(checkpoint["surviving"]) <= set(data["identifiers"])
        assert entry["reduction"] == pytest.approx(1 - entry["checkpoints"]["5"]["tokens"] / none_tokens)


def test_deterministic_strategies_give_identical_reports():
    names = ("fifo", "mask_last_n", "clear_tool_uses", "offload_preview")
    first = canary.run_canary({n: parse_strategy(n) for n in names}).to_json()
    assert canary.run_canary({n: parse_strategy(n) for n in names}).to_json() == first


def test_an_llm_strategy_without_a_compressor_is_refused():
    from optimizer.errors import AconError

    with pytest.raises(AconError, match="needs a compressor"):
        canary.run_canary({"guideline": parse_strategy("guideline")})


def test_cli_all_strategies_against_a_compressor_url(run_cli, stub, tmp_path, monkeypatch):
    monkeypatch.setenv("ACON_HOME", str(tmp_path / "home"))
    server = stub(lossy)
    path = tmp_path / "canary.json"
    code, out, err = run_cli(
        "canary", "--strategy", "all", "--json", str(path), "--base-url", server.base_url, "--model", "stub-model"
    )
    assert code == 0, err
    data = json.loads(path.read_text())
    assert list(data["strategies"]) == list(STRATEGY_NAMES)
    assert data["strategies"]["guideline"]["reduction"] >= 0.4
    assert server.requests and all(r["model"] == "stub-model" for r in server.requests)
    assert "RULE-MID-02" in out and "lost@3" in out and "kept" in out


def test_cli_deterministic_strategy_needs_no_model(run_cli, tmp_path, monkeypatch):
    monkeypatch.setenv("ACON_HOME", str(tmp_path / "home"))
    path = tmp_path / "canary.json"
    code, _, err = run_cli("canary", "--strategy", "fifo", "--json", str(path), "--base-url", "http://127.0.0.1:9/v1")
    assert code == 0, err
    assert list(json.loads(path.read_text())["strategies"]) == ["none", "fifo"]


def test_cli_takes_endpoint_and_guideline_from_an_experiment_config(run_cli, stub, tmp_path, monkeypatch):
    monkeypatch.setenv("ACON_HOME", str(tmp_path / "home"))
    server = stub(lossy)
    config = tmp_path / "exp.toml"
    config.write_text(
        f'name = "c"\nguideline = "{canary_guideline(tmp_path)}"\n[suite]\ntype = "smoke"\n'
        f'[endpoints.compressor]\nbase_url = "{server.base_url}"\nmodel = "from-config"\n'
    )
    path = tmp_path / "canary.json"
    code, out, err = run_cli("canary", "--strategy", "guideline", "--config", str(config), "--json", str(path))
    assert code == 0, err
    assert server.requests and {r["model"] for r in server.requests} == {"from-config"}
    assert "guideline:canary-copy@" in out


def canary_guideline(tmp_path) -> str:
    from optimizer.context.guideline import SEED_GUIDELINE, read_guideline, save_guideline

    seed = read_guideline(SEED_GUIDELINE)
    return str(save_guideline(seed.model_copy(update={"name": "canary-copy"}), tmp_path / "copy.md"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--strategy", "lifo"), "unknown strategy 'lifo'"),
        (("--strategy", "guideline", "--base-url", "ftp://x"), "--base-url"),
    ],
)
def test_cli_bad_options_exit_2_in_one_line(run_cli, args, message):
    code, _, err = run_cli("canary", *args)
    assert code == 2 and message in err and err.strip().count("\n") == 0
