"""`fifo`: the task plus the last k agent steps; older steps go whole, unless the contract keeps them."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from optimizer.context.history import EntryKind, History
from optimizer.context.recall import RecallStore
from optimizer.context.strategies import Fifo, parse_strategy
from optimizer.context.strategies.base import StrategyContext
from optimizer.world import RetentionClass, ToolCall
from tests.context.conftest import CATALOG, ERROR_LINE, PROTECTED, TASK, assert_contract, run

STATIC = RetentionClass.STATIC


def test_config_round_trips():
    strategy = Fifo(keep_last=3)
    assert parse_strategy(strategy.model_dump()) == strategy
    assert parse_strategy("fifo") == Fifo(keep_last=5)


@pytest.mark.parametrize(
    "config", [{"type": "fifo", "keep_last": 0}, {"type": "fifo", "keep_last": "many"}, {"type": "fifo", "keep": 3}]
)
def test_invalid_config_is_rejected(config):
    with pytest.raises(ValidationError):
        parse_strategy(config)


def test_expected_size():
    full = run(parse_strategy("none")).final_tokens()
    result = run(Fifo(keep_last=3))
    # Steps 0-6 fall out of the window at the final step: the catalogue read (1,097 tokens) and the
    # superseded stock read go; the page and the error shrink to their must-keep lines; the skill,
    # the receipt and the latest stock read keep their steps.
    assert (full, result.final_tokens()) == (4097, 2630)
    assert [s.input_tokens for s in result.episode.steps] == [
        24,
        491,
        1634,
        1946,
        2007,
        928,
        730,
        794,
        1337,
        1503,
        2630,
    ]


def test_invariants_and_what_goes():
    result = run(Fifo(keep_last=3))
    assert_contract(result)
    assert all(result.visible_at_end(literal) for literal in PROTECTED)
    assert not result.visible_at_end("FACT-STATIC-77") and not result.visible_at_end("REV-0001")
    # The dropped catalogue step leaves nothing behind: neither its call nor its result.
    assert not result.visible_at_end("docs/catalog.md")


def test_a_kept_action_keeps_every_one_of_its_results():
    """A step whose error line must stay keeps its action, so its other results cannot just vanish."""
    history = History()
    history.append(EntryKind.TASK, TASK, step=0, turn=0)
    calls = (ToolCall("a", "search", {"query": "x["}), ToolCall("b", "read_file", {"path": "docs/a.md"}))
    history.append(EntryKind.ACTION, "two calls", step=0, turn=0, calls=calls)
    history.append(
        EntryKind.RESULT,
        ERROR_LINE,
        step=0,
        turn=0,
        call=calls[0],
        retention=RetentionClass.ERROR_PARTIAL,
        must_keep=(ERROR_LINE,),
        is_error=True,
    )
    history.append(EntryKind.RESULT, CATALOG, step=0, turn=0, call=calls[1], retention=STATIC)
    for step in (1, 2):
        call = ToolCall(f"c{step}", "read_file", {"path": f"docs/{step}.md"})
        history.append(EntryKind.ACTION, "one call", step=step, turn=0, calls=(call,))
        history.append(EntryKind.RESULT, "short", step=step, turn=0, call=call, retention=STATIC)

    ctx = StrategyContext(task=TASK, step=3, store=RecallStore())
    condensation = Fifo(keep_last=1).condense(history, ctx)
    history.extend_edits(condensation.edits)
    view = history.replay()
    answered = {e.call.id for e in view if e.kind is EntryKind.RESULT}
    for action in (e for e in view if e.kind is EntryKind.ACTION):
        assert {c.id for c in action.calls} <= answered, f"step {action.step} shows a call without its result"
    assert any(e.content == ERROR_LINE for e in view)
    assert not any("FACT-STATIC-77" in e.content for e in view)


def test_each_entry_is_condensed_once_across_steps():
    result = run(Fifo(keep_last=2))
    ids = [i for r in result.episode.records for i in r.entry_ids]
    assert ids and len(ids) == len(set(ids))
