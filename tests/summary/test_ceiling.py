"""The summary ceiling: LangChain's folding with a summary written from the answer key, a tier-1 diagnostic."""

from __future__ import annotations

import pytest

from optimizer.agent.loop import EpisodeServices, run_episode
from optimizer.agent.reference import ReferenceAgent
from optimizer.context.history import Entry, EntryKind
from optimizer.context.moves.base import AnswerKey
from optimizer.context.strategies import parse_strategy
from optimizer.errors import ConfigError
from optimizer.evaluate.strategy_runs import check_tier
from optimizer.summary.ceiling import LangChainSummaryCeiling, ceiling_summary
from optimizer.summary.langchain_target import LangChainSummary
from optimizer.world.task import Need, NeedKind, ReferenceStep
from optimizer.world.tool import ToolCall
from tasks.reach_long import FAMILIES, build_task
from tests.context.conftest import compressor_for  # noqa: F401 - fixture

KNOBS = {"trigger_tokens": 2000, "keep_messages": 4}


def _summaries(episode) -> list[str]:
    return [episode.text(r.compressor_io[1]) for r in episode.records if r.action == "summarize" and r.compressor_io]


@pytest.mark.parametrize("family", FAMILIES)
def test_the_reference_agent_finishes_every_long_task_from_the_ceiling_summary(family, compressor_for):  # noqa: F811
    task = build_task(family, 0)
    ceiling = run_episode(task, ReferenceAgent(task.reference), LangChainSummaryCeiling(**KNOBS), EpisodeServices())
    assert ceiling.success, ceiling.reasons
    summaries = _summaries(ceiling)
    assert summaries and all(s.startswith("Calls made so far") for s in summaries)  # it folded, and wrote each time
    # the next step by tool name only: its arguments may hold values no result has shown yet
    calls = {s.call.name for s in task.reference if s.call is not None}
    assert all(s.rsplit("- ", 1)[1].removeprefix("call ") in calls | {"give the final answer"} for s in summaries)
    # The same folding with a summary that keeps nothing fails: what the ceiling passes on is its content.
    blank, _ = compressor_for(lambda request: "The agent has been working on the task.")
    folded = run_episode(
        task, ReferenceAgent(task.reference), LangChainSummary(**KNOBS), EpisodeServices(compressor=blank)
    )
    assert not folded.success


def test_the_ceiling_writes_calls_and_needed_lines_verbatim():
    rule = "Rule G-7: a gift card over 200 needs a manager code before issue_card."
    read = ToolCall("c1", "read_sheet", {"customer": "Elias"})
    skill = Entry(1, EntryKind.RESULT, f"# Skill\nfiller line\n{rule}\nmore filler", 1, 0)
    sheet = Entry(3, EntryKind.RESULT, "name: Elias\nbalance: 250\nnote: unrelated", 2, 0, call=read)
    action = Entry(2, EntryKind.ACTION, "", 2, 0, calls=(read,))
    needs = (
        Need(NeedKind.RULE, "manager code"),
        Need(NeedKind.VALUE, "250"),
        Need(NeedKind.VALUE, "Elias"),  # in the task statement: not the summary's to carry
    )
    key = AnswerKey((ReferenceStep(0, answer="done", needs=needs),))
    text = ceiling_summary([skill, action, sheet], key, task="Issue Elias a gift card.", next_up="call issue_card")
    assert rule in text and '- read_sheet({"customer": "Elias"})' in text
    assert '- from read_sheet({"customer": "Elias"}): balance: 250' in text  # which sheet said it
    assert text.endswith("Next step:\n- call issue_card")
    assert "filler" not in text and "name: Elias" not in text and "unrelated" not in text


def test_a_new_ceiling_format_is_a_new_run():
    assert LangChainSummaryCeiling(**KNOBS).version().endswith(f"-c{LangChainSummaryCeiling.FORMAT}")
    assert LangChainSummaryCeiling(**KNOBS).version() != LangChainSummary(**KNOBS).version()


def test_the_ceiling_runs_at_tier_1_and_the_oracle_still_does_not():
    check_tier(LangChainSummaryCeiling(**KNOBS), "llm")
    with pytest.raises(ConfigError, match="tier 0 only"):
        check_tier(parse_strategy("oracle"), "llm")
