"""`guideline`: a guideline file's policy (pinned classes, write moves, history moves) drives the contract,
the code-only moves and both LLM compressors."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from optimizer.context import load_guideline
from optimizer.context.guideline import SEED_GUIDELINE, Guideline, RetentionPolicy, read_guideline
from optimizer.context.strategies import GuidelineStrategy, parse_strategy
from optimizer.errors import ConfigError
from optimizer.world import RetentionClass
from tests.conftest import ROOT
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
STATIC = ["static"]
OLD = ["static", "dynamic_state", "error_partial"]


def guideline(
    *, write: list[dict] = (), history: list[dict] = (), allow_unpinned: bool = False, **policy: Any
) -> GuidelineStrategy:
    """The seed's texts under another policy (validated like a file would be)."""
    changed = RetentionPolicy.model_validate({"write": list(write), "history": list(history), **policy})
    spec = SEED.model_copy(update={"policy": changed, "name": "test"})
    return GuidelineStrategy(guideline=spec, allow_unpinned=allow_unpinned)


def compress(over: int, **extra: Any) -> dict:
    return {"move": "compress", "classes": STATIC, "over": over, **extra}


def summarize(over: int, **extra: Any) -> dict:
    return {"move": "summarize", "classes": OLD, "over": over, "keep_last": 2, **extra}


def test_config_round_trips_for_a_path_and_for_an_inline_guideline():
    by_path = GuidelineStrategy()
    assert parse_strategy(by_path.model_dump()) == by_path == parse_strategy("guideline")
    inline = guideline(write=[{"move": "offload", "over": 500}], history=[{"move": "clear", "classes": STATIC}])
    again = parse_strategy(inline.model_dump())
    assert again == inline and again.version() == inline.version() != by_path.version()
    assert Guideline.from_markdown(inline.spec.to_markdown()) == inline.spec


def inline(history: str = "h", **policy: Any) -> dict[str, Any]:
    return {"type": "guideline", "guideline": {"history": history, "observation": "o", "policy": policy}}


@pytest.mark.parametrize(
    "config",
    [
        {"type": "guideline", "guidline": "x.md"},
        inline(history=[{"move": "summarize", "over": 0}]),
        inline(history=[{"move": "clear", "classes": ["skill"]}]),  # the contract never lets a skill be cleared
        inline(write=[{"move": "compress", "classes": ["unknown"]}]),  # nor unclassified content be compressed
        inline(write=[{"move": "extract", "classes": ["write_receipt"]}]),  # nor a receipt be cut
        inline(write=[{"move": "squeeze"}]),
        inline(history=""),
    ],
)
def test_invalid_config_is_rejected(config):
    with pytest.raises(ValidationError):
        parse_strategy(config)


def test_a_format_1_policy_is_refused_with_a_pointer_to_the_new_format():
    text = SEED.to_markdown().replace("policy:\n", "policy:\n  t_hist: 900\n", 1)
    with pytest.raises(ConfigError, match=r"format-1 policy keys \(t_hist\).*lists of moves"):
        Guideline.from_markdown(text)


def test_a_missing_guideline_file_is_rejected():
    with pytest.raises(ConfigError, match="not found"):
        parse_strategy({"type": "guideline", "guideline": "guidelines/none-such.md"})


def test_the_seed_pins_skills_and_receipts():
    assert set(SEED.policy.pinned) == {RetentionClass.SKILL, RetentionClass.WRITE_RECEIPT}
    assert SEED.policy.unpinned_required() == []
    assert load_guideline(SEED_GUIDELINE).spec == SEED


def test_expected_size(compressor_for):
    compressor, server = compressor_for()
    result = run(guideline(write=[compress(500, recoverable=False)], history=[summarize(800)]), compressor=compressor)
    records = result.episode.records
    # Write time: the catalogue, the web page and the shipping doc (static, over 500 tokens) are
    # compressed (to the lossy compressor's 3 tokens). The history never passes 800 tokens of
    # compressible content afterwards, so no summary.
    assert [(r.step, list(r.entry_ids), r.tokens_before, r.tokens_after) for r in records] == [
        (1, [4], 1097, 3),
        (7, [16], 559, 3),
        (9, [20], 1080, 3),
    ]
    assert {(r.stage, r.action) for r in records} == {("write", "compress")}
    assert len(server.requests) == 3
    assert result.final_tokens() == 1370  # none: 4,097


def test_a_recoverable_compression_names_the_handle_of_the_original(compressor_for):
    compressor, _ = compressor_for()
    strategy = guideline(write=[compress(500)])
    assert strategy.offers_recall
    result = run(strategy, compressor=compressor)
    written = result.episode.text(next(e.text for e in result.episode.entries if e.id == 4))
    assert written.startswith('[compressed: result of read_file({"path": "docs/catalog.md"}) call_id=ref_2, 1097')
    assert 'recall(handle="h1")' in written and written.endswith("key facts only")
    assert result.episode.records[0].handles == ("h1",)
    assert_contract(result)


def test_invariants_with_the_seed_policy(compressor_for):
    compressor, server = compressor_for()
    result = run(guideline(write=[compress(300)], history=[summarize(300)]), compressor=compressor)
    assert_contract(result)
    assert result.episode.metrics.compressor_calls >= 3
    assert result.visible_at_end(SKILL) and result.visible_at_end(RECEIPT) and result.visible_at_end(PROBE)
    prompts = compressor_prompts(server)
    for pinned_or_unknown in ("RULE-MID-02", "ORD-5521", "PROBE-UNK-5"):
        assert not any(pinned_or_unknown in p for p in prompts)
    assert set(PROTECTED) - {"REV-0002"} <= {p for p in PROTECTED if result.visible_at_end(p)}


def test_the_summary_is_an_index_of_the_originals(compressor_for):
    """What the summary condensed stays retrievable: the summary names each result's handle and call."""
    compressor, _ = compressor_for()
    result = run(guideline(history=[summarize(300)]), compressor=compressor)
    record = next(r for r in result.episode.records if r.action == "summarize")
    assert record.handles
    summary = result.final_texts(3)[1]
    assert summary.startswith("PROGRESS: earlier steps done.")
    assert '- recall(handle="h1"): read_file({"path": "docs/catalog.md"}) call_id=ref_2, 1097 tokens' in summary
    without = run(guideline(history=[summarize(300, index=False)]), compressor=compressor)
    assert "recall(handle=" not in without.final_texts(3)[1]
    assert not guideline(history=[summarize(300, index=False)]).offers_recall


def test_pinning_is_what_keeps_the_skill(compressor_for):
    """The same policy with skills unpinned sends the skill into a summary that (here) drops it."""
    compressor, server = compressor_for()
    unpinned = guideline(
        pinned=["write_receipt"], history=[summarize(300, classes=["skill", *OLD])], allow_unpinned=True
    )
    assert unpinned.spec.policy.unpinned_required() == [RetentionClass.SKILL]
    result = run(unpinned, compressor=compressor)
    assert not result.visible_at_end("RULE-MID-02")
    assert any("RULE-MID-02" in p for p in compressor_prompts(server))
    assert result.visible_at_end(RECEIPT)


def test_offload_keeps_a_preview_and_a_recall_handle(compressor_for):
    compressor, server = compressor_for()
    strategy = guideline(
        write=[{"move": "offload", "classes": STATIC, "over": 500, "head_tokens": 120, "tail_tokens": 0}]
    )
    assert strategy.offers_recall and not strategy.uses_compressor
    result = run(strategy, compressor=compressor)
    written = result.episode.text(next(e.text for e in result.episode.entries if e.id == 4))
    assert written.startswith('[offloaded: result of read_file({"path": "docs/catalog.md"}) call_id=ref_2,')
    assert 'recall(handle="h1")' in written and "catalog note 0:" in written
    assert "FACT-STATIC-77" not in written and "[... preview cut ...]" not in written
    assert server.requests == []  # offloading needs no model
    assert_contract(result)


def test_write_moves_chain_in_order(compressor_for):
    """An extraction that leaves the result over the offload threshold is offloaded in turn."""
    compressor, server = compressor_for()
    extract = {
        "move": "extract",
        "classes": STATIC,
        "over": 500,
        "select": {"head": 40, "mention_task": False, "mention_calls": False},
    }
    strategy = guideline(write=[extract, {"move": "offload", "classes": STATIC, "over": 500}])
    result = run(strategy, compressor=compressor)
    catalogue = [r for r in result.episode.records if r.entry_ids == (4,)]
    assert [r.action for r in catalogue] == ["extract", "offload"]
    assert catalogue[0].tokens_after > 500 and catalogue[1].tokens_before == catalogue[0].tokens_after
    assert catalogue[0].handles == catalogue[1].handles == ("h1",)  # one original, one handle
    assert server.requests == []
    assert_contract(result)


def test_old_results_are_cleared_to_recall_placeholders(compressor_for):
    compressor, server = compressor_for()
    strategy = guideline(history=[{"move": "clear", "classes": STATIC, "trigger_tokens": 2000, "keep_last": 2}])
    result = run(strategy, compressor=compressor)
    first = result.episode.records[0]
    assert (first.action, first.entry_ids[0], first.handles[0]) == ("clear", 4, "h1")
    assert not result.visible_at_end("FACT-STATIC-77")
    assert result.visible_at_end('restore with recall(handle="h1")')
    assert {c for r in result.episode.records for c in r.dropped_by_class} == {"static"}
    assert server.requests == []
    assert_contract(result)


def test_a_summary_after_a_clear_counts_what_the_clear_left(compressor_for):
    """Cleared results are placeholders now: their written size must not trigger a summary."""
    compressor, server = compressor_for()
    clear = {"move": "clear", "classes": STATIC, "trigger_tokens": 1000, "keep_last": 0}
    result = run(guideline(history=[clear, summarize(1500)]), compressor=compressor)
    assert [r.action for r in result.episode.records if r.action == "summarize"] == []
    assert len(server.requests) == 0
    cleared = run(guideline(history=[summarize(1500)]), compressor=compressor)
    assert any(r.action == "summarize" for r in cleared.episode.records)  # without the clear, it summarizes


def test_the_budget_cuts_static_first_and_never_skills_or_receipts(compressor_for):
    compressor, _ = compressor_for()
    result = run(guideline(budget_tokens=1500), compressor=compressor)
    budget = [r for r in result.episode.records if r.stage == "budget"]
    assert budget and budget[0].step == 3 and budget[0].entry_ids == (4,)  # the catalogue (static) first
    assert budget[0].dropped_by_class == {"static": 1097 - 37}
    cut_classes = {c for r in budget for c in r.dropped_by_class}
    assert not cut_classes & {"skill", "write_receipt"}
    for index in range(3, len(result.episode.steps)):
        assert CATALOG in result.episode.checkpoint_texts(3, index) or index >= 10
        assert CATALOG not in result.episode.checkpoint_texts(4, index)
    assert result.visible_at_end(SKILL) and result.visible_at_end(RECEIPT)
    assert_contract(result)


def test_the_compressor_is_told_its_length_limit(compressor_for):
    """Unprompted, a small model writes until its cap cuts it off; the prompt states the cap as words."""
    compressor, server = compressor_for()
    run(
        guideline(write=[compress(300, max_tokens=100)], history=[summarize(300, max_tokens=200)]),
        compressor=compressor,
    )
    prompts = compressor_prompts(server)
    summaries = [p for p in prompts if "Write the new summary now" in p]
    observations = [p for p in prompts if "Write the compressed tool result now" in p]
    assert summaries and observations
    assert all("at most 120 words; the reply is cut off after 200 tokens" in p for p in summaries)
    assert all("at most 60 words; the reply is cut off after 100 tokens" in p for p in observations)
    assert all(r["max_tokens"] in (200, 100) for r in server.requests)


UNPINNED = "guidelines/examples/unpinned.md"


@pytest.mark.parametrize("pinned", [[], ["write_receipt"], ["skill"]])
def test_a_guideline_that_unpins_a_contract_class_is_refused_in_one_line(pinned):
    # The contract never cuts skills or write receipts, whatever a guideline says: leaving them to a summary
    # is refused where the guideline is loaded, not noted after the summary dropped them.
    with pytest.raises(ConfigError, match="unpinned") as info:
        guideline(pinned=pinned)
    missing = {"skill", "write_receipt"} - set(pinned)
    assert all(name in str(info.value) for name in missing) and "\n" not in str(info.value)
    with pytest.raises(ConfigError, match=f"{UNPINNED}.*skill.*unpinned.*allow_unpinned"):
        parse_strategy({"type": "guideline", "guideline": UNPINNED})


def test_an_unpinned_guideline_runs_only_under_an_explicit_override_that_says_so():
    allowed = parse_strategy({"type": "guideline", "guideline": UNPINNED, "allow_unpinned": True})
    assert "skill" in allowed.contract_override() and "unpinned" in allowed.contract_override()
    assert parse_strategy(allowed.model_dump()) == allowed
    # Valid guidelines are unchanged: no override to report, and the config (and so a run's meta) as before.
    seed = parse_strategy("guideline")
    assert seed.contract_override() is None and "allow_unpinned" not in seed.model_dump()
    assert GuidelineStrategy(allow_unpinned=True).contract_override() is None


SHIPPED = sorted((ROOT / "guidelines").rglob("*.md"))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT / "guidelines")))
def test_every_shipped_guideline_file_reads(path):
    """A guideline file is read only when a user or a benchmark names it: one that YAML cannot read (a colon in
    a description) would otherwise ship unnoticed."""
    guideline = read_guideline(path)
    assert guideline.name and guideline.texts.history.strip()
