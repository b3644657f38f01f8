"""`mask_last_n`: observations older than the last n steps become a one-line placeholder."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from optimizer.context.strategies import MaskLastN, parse_strategy
from optimizer.tokens import count_tokens
from optimizer.world import ToolOutput
from tests.context.conftest import (
    CATALOG,
    PROTECTED,
    STANDARD,
    Scripted,
    assert_contract,
    run,
)


def test_config_round_trips():
    strategy = MaskLastN(n=2, polling=3, keep_first=False, recoverable=True)
    assert parse_strategy(strategy.model_dump()) == strategy
    assert parse_strategy("mask_last_n") == MaskLastN(n=3, polling=1, keep_first=True, recoverable=False)


@pytest.mark.parametrize(
    "config",
    [
        {"type": "mask_last_n", "n": 0},
        {"type": "mask_last_n", "polling": 0},
        {"type": "mask_last_n", "recoverable": "perhaps"},
        {"type": "mask_last_n", "window": 3},
    ],
)
def test_invalid_config_is_rejected(config):
    with pytest.raises(ValidationError):
        parse_strategy(config)


def test_expected_size():
    result = run(MaskLastN(n=3))
    # The catalogue read (1,097 tokens) shrinks to "[Old tool output omitted: 61 lines]" at step 5,
    # the page to its warning at step 6, and so on; the last three steps stay raw.
    assert [s.input_tokens for s in result.episode.steps] == [
        24,
        491,
        1634,
        1946,
        2007,
        984,
        796,
        860,
        1459,
        1625,
        2752,
    ]
    record = result.episode.records[0]
    summary = (record.step, record.entry_ids, record.tokens_before, record.tokens_after)
    assert summary == (5, (4,), 1097, 10)
    assert (count_tokens(CATALOG), count_tokens("[Old tool output omitted: 61 lines]")) == (1097, 10)


def test_invariants_and_what_goes():
    result = run(MaskLastN(n=3))
    assert_contract(result)
    assert all(result.visible_at_end(literal) for literal in PROTECTED)
    assert not result.visible_at_end("FACT-STATIC-77") and not result.visible_at_end("REV-0001")
    assert result.visible_at_end("[Old tool output omitted: 61 lines]")


def test_the_first_observation_is_kept_unless_configured_otherwise():
    script = (Scripted("read_file", {"path": "docs/catalog.md"}, ToolOutput(CATALOG)), *STANDARD[1:])
    assert run(MaskLastN(n=2), script).visible_at_end("FACT-STATIC-77")
    assert not run(MaskLastN(n=2, keep_first=False), script).visible_at_end("FACT-STATIC-77")


def test_polling_masks_only_every_k_steps_so_the_prefix_stays_cached_between_polls():
    result = run(MaskLastN(n=1, polling=3))
    assert {r.step for r in result.episode.records} <= {0, 3, 6, 9}
    breaks = [s.step for s in result.episode.steps if s.cache_break]
    assert breaks and set(breaks) <= {3, 6, 9}
    assert_contract(result)


def test_recoverable_masks_offer_recall_with_a_handle():
    result = run(MaskLastN(n=3, recoverable=True))
    assert result.visible_at_end('restore with recall(handle="h1")')
    assert result.episode.records[0].handles == ("h1",)
    # The tool is offered (the system prompt lists the tools) from the first request that shows a handle.
    first = next(
        i for i, sent in enumerate(result.sent) if any("recall(handle=" in (m["content"] or "") for m in sent[1:])
    )
    assert first > 0 and "recall" not in result.sent[first - 1][0]["content"]
    assert all("recall" in sent[0]["content"] for sent in result.sent[first:])
    assert not any("recall" in sent[0]["content"] for sent in run(MaskLastN(n=3)).sent)
    assert_contract(result)
