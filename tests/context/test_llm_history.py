"""`llm_history`: ACON history compression. Past `t_hist`, old steps fold into one LLM summary."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from optimizer.context.strategies import LlmHistory, parse_strategy
from optimizer.errors import ConfigError
from optimizer.world import RetentionClass
from tests.context.conftest import (
    ERROR_LINE,
    HISTORY_MARK,
    LOSSY_SUMMARY,
    PAGE_WARNING,
    PROBE,
    PROTECTED,
    RECEIPT,
    SKILL,
    STANDARD,
    TASK,
    assert_contract,
    compressor_prompts,
    run,
)

PINNED = (RetentionClass.SKILL, RetentionClass.WRITE_RECEIPT)


def test_config_round_trips():
    strategy = LlmHistory(t_hist=900, keep_last=2, max_tokens=200, pinned=PINNED)
    assert parse_strategy(strategy.model_dump()) == strategy
    assert parse_strategy("llm_history") == LlmHistory(t_hist=2048, keep_last=1, max_tokens=512, pinned=())


@pytest.mark.parametrize(
    "config",
    [
        {"type": "llm_history", "t_hist": 0},
        {"type": "llm_history", "keep_last": 0},
        {"type": "llm_history", "pinned": ["rules"]},
        {"type": "llm_history", "summary_tokens": 100},
    ],
)
def test_invalid_config_is_rejected(config):
    with pytest.raises(ValidationError):
        parse_strategy(config)


def test_a_missing_guideline_file_is_rejected():
    with pytest.raises(ConfigError, match="not found"):
        parse_strategy({"type": "llm_history", "guideline": "guidelines/none-such.md"})


def test_expected_size(compressor_for):
    compressor, server = compressor_for()
    result = run(LlmHistory(t_hist=800, pinned=PINNED), compressor=compressor)
    records = result.episode.records
    # Step 3: the catalogue step (1,097 tokens + its call) passes 800 and folds into the 13-token
    # summary. Step 9: page, error, stock reads and web page pass it again; the summary grows to 36
    # tokens with the page warning and error line restored. The skill and receipt steps (pinned) and
    # the probe step (unknown: the contract keeps it) never enter the summary.
    assert [(r.step, list(r.entry_ids), r.tokens_before, r.tokens_after) for r in records] == [
        (3, [3, 4], 1115, 13),
        (9, [5, 6, 7, 8, 9, 10, 13, 14, 15, 16], 981, 36),
    ]
    assert len(server.requests) == 2
    assert [s.input_tokens for s in result.episode.steps] == [24, 491, 1634, 828, 889, 953, 1015, 1079, 1686, 767, 1894]


def test_invariants_with_skills_and_receipts_pinned(compressor_for):
    compressor, _ = compressor_for()
    result = run(LlmHistory(t_hist=800, pinned=PINNED), compressor=compressor)
    assert_contract(result)
    # The latest stock read went into the summary, where only the model can keep its value.
    assert [p for p in PROTECTED if not result.visible_at_end(p)] == ["REV-0002"]
    assert result.visible_at_end(SKILL) and result.visible_at_end(RECEIPT) and result.visible_at_end(PROBE)


def test_acon_pins_nothing_so_a_lossy_summary_takes_the_skill_rules(compressor_for):
    """The baseline: without pinning, the skill is at the compressor's mercy (receipt lines are not)."""
    compressor, server = compressor_for()
    result = run(LlmHistory(t_hist=1000), compressor=compressor)
    assert not any(result.visible_at_end(rule) for rule in ("RULE-HEAD-01", "RULE-MID-02", "RULE-TAIL-03"))
    assert any("RULE-MID-02" in p for p in compressor_prompts(server))
    assert result.visible_at_end(RECEIPT)  # a must-keep line, restored in code


def test_must_keep_lines_survive_every_later_summary(compressor_for):
    """A summary folds in the previous one; lines restored into it must survive the next rewrite."""
    compressor, server = compressor_for()
    result = run(LlmHistory(t_hist=300, pinned=PINNED), compressor=compressor)
    assert len(server.requests) >= 3
    assert result.visible_at_end(ERROR_LINE) and result.visible_at_end(PAGE_WARNING)
    assert_contract(result)


def test_unknown_results_are_never_summarized(compressor_for):
    compressor, server = compressor_for()
    script = (STANDARD[8], *STANDARD[:8], STANDARD[9])  # the unclassified probe first
    result = run(LlmHistory(t_hist=300), script, compressor=compressor)
    assert result.episode.records, "the history was summarized"
    assert result.visible_at_end(PROBE)
    assert not any("PROBE-UNK-5" in p for p in compressor_prompts(server))


def test_the_summary_follows_the_task_and_the_last_step_stays_raw(compressor_for):
    compressor, _ = compressor_for()
    result = run(LlmHistory(t_hist=800, pinned=PINNED), compressor=compressor)
    for sent, step in zip(result.sent, result.episode.steps, strict=True):
        if step.step < 3:
            continue
        assert sent[1] == {"role": "user", "content": TASK}
        assert sent[2]["content"].startswith(f"<history_summary>\n{LOSSY_SUMMARY}")
        assert sent[-1]["role"] == "tool"  # the previous step's result, raw
        assert sent[-1]["content"] == STANDARD[step.step - 1].output.content


def test_the_prompt_carries_task_guideline_and_previous_summary(compressor_for):
    compressor, server = compressor_for()
    run(LlmHistory(t_hist=300, pinned=PINNED), compressor=compressor)
    first, second = compressor_prompts(server)[:2]
    assert HISTORY_MARK in first and "# Previous summary" not in first
    assert "VARIABLES" in first  # the seed guideline's history instruction
    assert TASK in first and "write_receipt: Keep every write receipt" in first
    assert "# Previous summary" in second and LOSSY_SUMMARY in second
