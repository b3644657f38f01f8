"""`none`: the control. Everything is sent, every step, and nothing is recorded as compressed."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from optimizer.context.strategies import NoCompression, parse_strategy
from tests.context.conftest import DROPPABLE, PROTECTED, assert_contract, run


def test_config_round_trips():
    strategy = NoCompression()
    assert parse_strategy(strategy.model_dump()) == strategy
    assert parse_strategy("none") == strategy


@pytest.mark.parametrize("config", [{"type": "none", "keep_last": 3}, {"type": "nothing"}, {"type": None}])
def test_invalid_config_is_rejected(config):
    with pytest.raises(ValidationError):
        parse_strategy(config)


def test_expected_size_is_the_full_history():
    result = run(NoCompression())
    episode = result.episode
    # Every checkpoint holds exactly what was written: 11 steps, 10 results, 4,097 tokens at the end.
    assert [s.input_tokens for s in episode.steps] == [24, 491, 1634, 1946, 2007, 2071, 2133, 2197, 2804, 2970, 4097]
    assert episode.records == [] and episode.metrics.compressions == 0
    for index in range(len(episode.steps)):
        assert episode.checkpoint_texts(3, index) == episode.checkpoint_texts(4, index)
        assert sorted(episode.checkpoint_texts(3, index)) == sorted(
            episode.text(e.text) for e in episode.entries if e.visible_from <= episode.steps[index].step
        )


def test_invariants_and_nothing_lost():
    result = run(NoCompression())
    assert_contract(result)
    assert all(result.visible_at_end(literal) for literal in PROTECTED + DROPPABLE)
