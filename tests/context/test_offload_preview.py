"""`offload_preview`: large results go to the store at write time; a head/tail preview and a handle stay."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from optimizer.context.strategies import OffloadPreview, parse_strategy
from optimizer.tokens import count_tokens
from tests.context.conftest import CATALOG, PAGE_HTML, PROTECTED, SHIPPING, SKILL, assert_contract, run

OFFLOAD = OffloadPreview(max_tokens=500, head_tokens=40, tail_tokens=20)


def test_config_round_trips():
    assert parse_strategy(OFFLOAD.model_dump()) == OFFLOAD
    default = OffloadPreview(max_tokens=800, head_tokens=200, tail_tokens=80)
    assert parse_strategy("offload_preview") == default


@pytest.mark.parametrize(
    "config",
    [
        {"type": "offload_preview", "max_tokens": 0},
        {"type": "offload_preview", "head_tokens": -1},
        {"type": "offload_preview", "tail_tokens": "some"},
        {"type": "offload_preview", "preview": 100},
    ],
)
def test_invalid_config_is_rejected(config):
    with pytest.raises(ValidationError):
        parse_strategy(config)


def test_expected_size():
    result = run(OFFLOAD)
    records = result.episode.records
    # The two documents and the web page pass 500 tokens; each becomes a ~100-token placeholder with a
    # head of at most 40 tokens and a tail of at most 20, each cut back to a line or word boundary (the
    # catalog keeps two whole notes and the last). Stock reads, the receipt and the page of hits stay.
    assert (count_tokens(CATALOG), count_tokens(PAGE_HTML), count_tokens(SHIPPING)) == (1097, 559, 1080)
    assert [(r.stage, list(r.entry_ids), r.tokens_before, r.tokens_after) for r in records] == [
        ("write", [4], 1097, 96),
        ("write", [16], 559, 98),
        ("write", [20], 1080, 97),
    ]
    assert result.final_tokens() == 1652  # none: 4,097


def test_invariants_and_preview():
    result = run(OFFLOAD)
    assert_contract(result)
    assert all(result.visible_at_end(literal) for literal in PROTECTED)
    assert not result.visible_at_end("FACT-STATIC-77")  # it sits in the middle, outside head and tail
    written = next(result.episode.text(e.text) for e in result.episode.entries if e.id == 4)
    head = '[offloaded: result of read_file({"path": "docs/catalog.md"}) call_id=ref_2, 1097 tokens;'
    assert written.startswith(head)
    assert 'recall(handle="h1")' in written and "catalog note 0:" in written and "catalog note 59:" in written
    assert "[... preview cut ...]" in written
    assert "\ncatalog note 1: bins, labels and carrier cut-off times are unchanged this quarter.\n[..." in written


def test_a_large_skill_is_never_offloaded():
    result = run(OffloadPreview(max_tokens=100))
    assert result.visible_at_end(SKILL)
    assert_contract(result)
