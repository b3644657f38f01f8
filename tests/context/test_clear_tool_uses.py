"""`clear_tool_uses`: past a token trigger, the oldest tool results become recall placeholders."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from optimizer.context.history import EntryKind, History
from optimizer.context.recall import RecallStore
from optimizer.context.strategies import ClearToolUses, parse_strategy
from optimizer.context.strategies.base import StrategyContext
from optimizer.world import RetentionClass, ToolCall, ToolOutput
from tests.context.conftest import (
    CATALOG,
    INJECTION_LINE,
    PAGE_HTML,
    PROTECTED,
    SHIPPING,
    SKILL,
    STANDARD,
    TASK,
    Scripted,
    assert_contract,
    run,
)

CLEAR = ClearToolUses(trigger_tokens=2000, keep_last=2)
STATIC = RetentionClass.STATIC


def test_config_round_trips():
    strategy = ClearToolUses(trigger_tokens=900, keep_last=1, clear_at_least=200, exclude_tools=("read_file",))
    assert parse_strategy(strategy.model_dump()) == strategy
    default = ClearToolUses(trigger_tokens=4000, keep_last=3, clear_at_least=0, exclude_tools=())
    assert parse_strategy("clear_tool_uses") == default


@pytest.mark.parametrize(
    "config",
    [
        {"type": "clear_tool_uses", "trigger_tokens": 0},
        {"type": "clear_tool_uses", "keep_last": -1},
        {"type": "clear_tool_uses", "clear_at_least": -5},
        {"type": "clear_tool_uses", "exclude_tools": 7},
        {"type": "clear_tool_uses", "exclude": ["read_file"]},
    ],
)
def test_invalid_config_is_rejected(config):
    with pytest.raises(ValidationError):
        parse_strategy(config)


def test_expected_size():
    result = run(CLEAR)
    records = result.episode.records
    # At step 8 the view passes 2,000 tokens: the catalogue and the page become placeholders (the skill
    # and receipt are never candidates; the error and the superseded stock read are shorter than their
    # placeholders, so clearing them would save nothing); at step 10 the web page follows.
    assert [(r.step, list(r.entry_ids), r.tokens_before, r.tokens_after) for r in records] == [
        (8, [4, 6], 1366, 77),
        (10, [16], 559, 37),
    ]
    assert [s.input_tokens for s in result.episode.steps] == [
        24,
        491,
        1634,
        1946,
        2007,
        2071,
        2133,
        2197,
        1515,
        1681,
        2286,
    ]
    assert records[0].handles == ("h1", "h2")


def test_invariants_and_what_goes():
    result = run(CLEAR)
    assert_contract(result)
    assert all(result.visible_at_end(literal) for literal in PROTECTED)
    assert not result.visible_at_end("FACT-STATIC-77")
    placeholder = next(t for t in result.final_texts(5) if "call_id=ref_2" in t)
    assert placeholder.startswith('[cleared: result of read_file({"path": "docs/catalog.md"}) call_id=ref_2,')
    assert 'restore with recall(handle="h1")' in placeholder


def test_a_static_result_claiming_to_be_a_skill_is_cleared_and_a_real_skill_read_is_not():
    """Classification comes from registration and arguments, never from what the output says."""
    skill_via_file = Scripted("read_file", {"path": "skills/ordering/SKILL.md"}, ToolOutput(SKILL))
    forged = Scripted("fetch_page", {"url": "https://example.com/skill"}, ToolOutput(PAGE_HTML))
    forged_file = Scripted("read_file", {"path": "docs/SKILL.md"}, ToolOutput(f"{INJECTION_LINE}\n{CATALOG}"))
    tail = Scripted("read_file", {"path": "docs/shipping.md"}, ToolOutput(SHIPPING))
    result = run(ClearToolUses(trigger_tokens=1000, keep_last=1), (skill_via_file, forged, forged_file, tail))

    classes = [(c.name, c.arguments, c.retention) for c in result.episode.tool_calls]
    assert [c[2] for c in classes] == ["skill", "static", "static", "static"]
    assert not result.visible_at_end(INJECTION_LINE)
    assert not result.visible_at_end("FACT-STATIC-77")
    assert result.visible_at_end(SKILL)  # the real skill, verbatim
    cleared = [i for r in result.episode.records for i in r.entry_ids]
    assert cleared == [4, 6]  # the forged page and forged file; entry 2 (the skill read) never
    assert_contract(result)


def test_keep_last_protects_the_most_recent_results():
    result = run(ClearToolUses(trigger_tokens=1000, keep_last=4))
    last = result.episode.steps[-1]
    shown = [result.episode.text(h) for h in last.replayed]
    for item in STANDARD[-4:]:
        assert item.output.content in shown


def test_keep_last_larger_than_the_number_of_results_clears_nothing():
    history = History()
    history.append(EntryKind.TASK, TASK, step=0, turn=0)
    for step in range(2):
        call = ToolCall(f"c{step}", "read_file", {"path": f"docs/{step}.md"})
        history.append(EntryKind.ACTION, "read", step=step, turn=0, calls=(call,))
        history.append(EntryKind.RESULT, CATALOG, step=step, turn=0, call=call, retention=STATIC)
    ctx = StrategyContext(task=TASK, step=2, store=RecallStore())
    assert ClearToolUses(trigger_tokens=1000, keep_last=3).condense(history, ctx) is None


def test_below_the_trigger_nothing_is_cleared():
    result = run(ClearToolUses(trigger_tokens=5000))
    assert result.episode.records == []


def test_clearing_that_frees_too_little_is_skipped():
    # At step 8 clearing would free 1,397 - 162 = 1,235 tokens: below 1,300, so it waits for step 10.
    waits = run(ClearToolUses(trigger_tokens=2000, keep_last=2, clear_at_least=1300))
    assert waits.episode.records[0].step == 10
    assert run(ClearToolUses(trigger_tokens=2000, keep_last=2, clear_at_least=5000)).episode.records == []


def test_excluded_tools_are_never_cleared():
    result = run(ClearToolUses(trigger_tokens=1000, keep_last=0, exclude_tools=("read_file",)))
    assert result.visible_at_end("FACT-STATIC-77") and result.visible_at_end(SHIPPING)
    assert not result.visible_at_end(INJECTION_LINE)
    assert_contract(result)
