"""`guideline`: a guideline file's policy drives the contract plus both LLM compressors."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from optimizer.context import load_guideline
from optimizer.context.guideline import SEED_GUIDELINE, Guideline, RetentionPolicy, read_guideline
from optimizer.context.strategies import GuidelineStrategy, parse_strategy
from optimizer.errors import ConfigError
from optimizer.world import RetentionClass
from tests.context.conftest import (
    CATALOG,
    PROBE,
    PROTECTED,
    RECEIPT,
    SKILL,
    assert_contract,
    compressor_prompts,
    run,
)

SEED = read_guideline(SEED_GUIDELINE)


def guideline(**policy: Any) -> GuidelineStrategy:
    """The seed guideline with some policy fields changed (validated like a file would be)."""
    changed = RetentionPolicy.model_validate({**SEED.policy.model_dump(), **policy})
    return GuidelineStrategy(guideline=SEED.model_copy(update={"policy": changed, "name": "test"}))


def test_config_round_trips_for_a_path_and_for_an_inline_guideline():
    by_path = GuidelineStrategy()
    assert parse_strategy(by_path.model_dump()) == by_path == parse_strategy("guideline")
    inline = guideline(t_obs=500, old={"static": "clear"})
    again = parse_strategy(inline.model_dump())
    assert again == inline and again.version() == inline.version() != by_path.version()
    assert Guideline.from_markdown(inline.spec.to_markdown()) == inline.spec


def inline(history: str = "h", **policy: Any) -> dict[str, Any]:
    return {"type": "guideline", "guideline": {"history": history, "observation": "o", "policy": policy}}


@pytest.mark.parametrize("config", [
    {"type": "guideline", "guidline": "x.md"},
    inline(t_hist=0),
    inline(old={"skill": "clear"}),  # the contract never lets a skill be cleared
    inline(fresh={"unknown": "compress"}),  # nor unclassified content be compressed
    inline(history=""),
])
def test_invalid_config_is_rejected(config):
    with pytest.raises(ValidationError):
        parse_strategy(config)


def test_a_missing_guideline_file_is_rejected():
    with pytest.raises(ConfigError, match="not found"):
        parse_strategy({"type": "guideline", "guideline": "guidelines/none-such.md"})


def test_the_seed_pins_skills_and_receipts():
    assert set(SEED.policy.pinned) == {RetentionClass.SKILL, RetentionClass.WRITE_RECEIPT}
    assert SEED.policy.unpinned_required() == []
    assert load_guideline(SEED_GUIDELINE).spec == SEED


def test_expected_size(compressor_for):
    compressor, server = compressor_for()
    result = run(guideline(t_obs=500, t_hist=800), compressor=compressor)
    records = result.episode.records
    # Write time: the catalogue, the web page and the shipping doc (static, over 500 tokens) are
    # compressed (to the lossy compressor's 3 tokens). The history never passes 800 tokens of
    # compressible content afterwards, so no summary.
    assert [(r["step"], r["entry_ids"], r["tokens_before"], r["tokens_after"]) for r in records] == [
        (1, [4], 1097, 3), (7, [16], 559, 3), (9, [20], 1080, 3)
    ]
    assert {(r["stage"], r["action"]) for r in records} == {("write", "compress")}
    assert len(server.requests) == 3
    assert result.final_tokens() == 1370  # none: 4,097


def test_invariants_with_the_seed_policy(compressor_for):
    compressor, server = compressor_for()
    result = run(guideline(t_obs=300, t_hist=300), compressor=compressor)
    assert_contract(result)
    assert result.episode.metrics["compressor_calls"] >= 3
    assert result.visible_at_end(SKILL) and result.visible_at_end(RECEIPT) and result.visible_at_end(PROBE)
    prompts = compressor_prompts(server)
    for pinned_or_unknown in ("RULE-MID-02", "ORD-5521", "PROBE-UNK-5"):
        assert not any(pinned_or_unknown in p for p in prompts)
    assert set(PROTECTED) - {"REV-0002"} <= {p for p in PROTECTED if result.visible_at_end(p)}


def test_pinning_is_what_keeps_the_skill(compressor_for):
    """The same policy with skills unpinned sends the skill into a summary that (here) drops it."""
    compressor, server = compressor_for()
    unpinned = guideline(t_hist=300, pinned=["write_receipt"], old={"skill": "compress"})
    assert unpinned.spec.policy.unpinned_required() == [RetentionClass.SKILL]
    result = run(unpinned, compressor=compressor)
    assert not result.visible_at_end("RULE-MID-02")
    assert any("RULE-MID-02" in p for p in compressor_prompts(server))
    assert result.visible_at_end(RECEIPT)


def test_fresh_clear_offloads_with_a_preview_and_a_recall_handle(compressor_for):
    compressor, server = compressor_for()
    strategy = guideline(t_obs=500, fresh={"static": "clear"})
    assert strategy.offers_recall
    result = run(strategy, compressor=compressor)
    written = result.episode.text(next(e["text"] for e in result.episode.entries if e["id"] == 4))
    assert written.startswith('[offloaded: result of read_file({"path": "docs/catalog.md"}) call_id=ref_2,')
    assert 'recall(handle="h1")' in written and "catalog note 0:" in written
    assert "FACT-STATIC-77" not in written
    assert server.requests == []  # clearing needs no model
    assert_contract(result)


def test_old_clear_replaces_old_static_results_with_recall_placeholders(compressor_for):
    compressor, _ = compressor_for()
    strategy = guideline(t_obs=5000, t_hist=1000, old={"static": "clear", "dynamic_state": "compress"})
    result = run(strategy, compressor=compressor)
    first = result.episode.records[0]
    assert (first["step"], first["action"], first["entry_ids"], first["handles"]) == (4, "clear", [4], ["h1"])
    assert not result.visible_at_end("FACT-STATIC-77")
    assert result.visible_at_end('restore with recall(handle="h1")')
    assert_contract(result)


def test_a_cleared_result_no_longer_counts_toward_t_hist(compressor_for):
    """Once the catalogue is a placeholder, the small groups after it must not trigger summaries."""
    compressor, server = compressor_for()
    strategy = guideline(t_obs=5000, t_hist=1000, old={"static": "clear", "dynamic_state": "compress"})
    result = run(strategy, compressor=compressor)
    records = result.episode.records
    assert all(r["entry_ids"] and r["tokens_after"] < r["tokens_before"] for r in records), records
    # Pending content after step 4: page, error, stock reads, web page (559) and calls, below 1,000.
    assert len(server.requests) == 0
    assert [r["step"] for r in records] == [4]


def test_the_budget_cuts_static_first_and_never_skills_or_receipts(compressor_for):
    compressor, _ = compressor_for()
    result = run(guideline(t_obs=5000, budget_tokens=1500), compressor=compressor)
    budget = [r for r in result.episode.records if r["stage"] == "budget"]
    assert budget and budget[0]["step"] == 3 and budget[0]["entry_ids"] == [4]  # the catalogue (static) first
    assert budget[0]["dropped_by_class"] == {"static": 1097 - 37}
    cut_classes = {c for r in budget for c in r["dropped_by_class"]}
    assert not cut_classes & {"skill", "write_receipt"}
    for index in range(3, len(result.episode.steps)):
        assert CATALOG in result.episode.checkpoint_texts(3, index) or index >= 10
        assert CATALOG not in result.episode.checkpoint_texts(4, index)
    assert result.visible_at_end(SKILL) and result.visible_at_end(RECEIPT)
    assert_contract(result)


def test_the_compressor_is_told_its_length_limit(compressor_for):
    """Unprompted, a small model writes until its cap cuts it off; the prompt states the cap as words."""
    compressor, server = compressor_for()
    run(guideline(t_obs=300, t_hist=300, summary_max_tokens=200, observation_max_tokens=100), compressor=compressor)
    prompts = compressor_prompts(server)
    summaries = [p for p in prompts if "Write the new summary now" in p]
    observations = [p for p in prompts if "Write the compressed tool result now" in p]
    assert summaries and observations
    assert all("at most 120 words; the reply is cut off after 200 tokens" in p for p in summaries)
    assert all("at most 60 words; the reply is cut off after 100 tokens" in p for p in observations)
    assert all(r["max_tokens"] in (200, 100) for r in server.requests)
