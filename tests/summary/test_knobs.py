"""The trigger chosen beside the text: each allowed trigger judged once, the most successful at the lowest peak."""

from __future__ import annotations

import pytest

from optimizer.summary.knobs import Judged, choose_trigger
from optimizer.summary.langchain_target import LangChainSummary


def _at(trigger: int) -> LangChainSummary:
    return LangChainSummary(trigger_tokens=trigger, keep_messages=4, instructions="Keep ids.")


def _judge(results: dict[int, tuple[float, float]], judged: list[int]):
    def judge(strategy: LangChainSummary) -> Judged:
        judged.append(strategy.trigger_tokens)
        success, peak = results[strategy.trigger_tokens]
        return Judged(success, peak, 8)

    return judge


@pytest.mark.parametrize(
    ("results", "chosen"),
    [
        # the churning trigger loses to one above a summary plus the kept messages, at a higher peak
        ({2000: (0.25, 2858.0), 3000: (0.75, 3100.0), 4000: (0.75, 3400.0)}, 3000),
        # equal success: the lower peak
        ({2000: (0.5, 2400.0), 3000: (0.5, 2300.0), 4000: (0.5, 3400.0)}, 3000),
        # equal success and peak: the user's own trigger
        ({2000: (0.5, 2400.0), 3000: (0.5, 2400.0), 4000: (0.25, 2400.0)}, 2000),
    ],
)
def test_the_most_successful_trigger_wins_then_the_lower_peak_then_the_users(results, chosen):
    judged: list[int] = []
    logged: list[str] = []
    choice = choose_trigger(_at, 2000, [3000, 2000, 4000], _judge(results, judged), "tier 0", logged.append)
    assert choice.chosen == chosen and choice.asked == 2000
    assert judged == [2000, 3000, 4000]  # the user's first, and each trigger once
    assert [t.trigger for t in choice.trials] == judged and len(logged) == 3
    data = choice.to_dict()
    assert data["chosen"] == chosen and data["judged_by"] == "tier 0"
    assert data["trials"][0] == {
        "trigger": 2000,
        "success": results[2000][0],
        "peak_mean": results[2000][1],
        "episodes": 8,
    }
    assert f"trigger {chosen:,} chosen (asked 2,000)" in choice.describe()


def test_a_peak_goal_leaves_out_the_trigger_that_buys_success_by_not_summarizing():
    # As on the test tasks: at 3,000 nothing was summarized, so it solved what full context solves, at its peak.
    results = {2000: (0.25, 2371.0), 3000: (0.5, 3303.0), 2500: (0.375, 2900.0)}
    judged: list[int] = []
    choice = choose_trigger(_at, 2000, [2500, 3000], _judge(results, judged), "tier 1", max_peak=3000)
    assert choice.chosen == 2500 and choice.max_peak == 3000 and choice.to_dict()["max_peak_tokens"] == 3000
    assert len(choice.trials) == 3  # the trigger left out is still reported
    assert "chosen (asked 2,000) under a mean peak of 3,000" in choice.describe()
    # No trigger within the goal, the user's own included: the user's own stays, and the log says why.
    logged: list[str] = []
    choice = choose_trigger(_at, 2000, [3000], _judge(results, []), "tier 1", logged.append, max_peak=2000)
    assert choice.chosen == 2000 and logged[-1] == "no trigger kept the mean peak within 2,000: the asked 2,000 stays"


def test_the_default_peak_goal_judges_the_default_text_once_at_the_asked_trigger_and_keeps_an_equal_peak():
    # The learned text's longer summaries cost peak at the asked trigger; a lower trigger matches the default's.
    results = {2000: (0.5, 2354.0), 1800: (0.375, 2175.6), 1600: (0.25, 2001.0)}
    default_judged: list[str | None] = []

    def judge(strategy: LangChainSummary) -> Judged:
        if strategy.instructions is None:
            default_judged.append(f"default@{strategy.trigger_tokens}")
            return Judged(1 / 12, 2175.6, 12)
        return Judged(*results[strategy.trigger_tokens], 12)

    def default_at(trigger: int) -> LangChainSummary:
        return LangChainSummary(trigger_tokens=trigger, keep_messages=4, instructions=None)

    logged: list[str] = []
    choice = choose_trigger(_at, 2000, [1800, 1600], judge, "tier 1", logged.append, "default", default_at)
    assert default_judged == ["default@2000"]
    assert choice.max_peak == 2176 and choice.chosen == 1800  # 2,175.6 is within the goal the default set
    assert choice.to_dict()["max_peak_from_default"] == {
        "trigger": 2000,
        "success": 1 / 12,
        "peak_mean": 2175.6,
        "episodes": 12,
    }
    assert "under a mean peak of 2,176 (the default text's at 2,000, success 0.08)" in choice.describe()
    assert logged[0] == "peak goal: the default text at 2,000, success 0.08, mean peak 2,176"


def test_a_default_peak_goal_without_the_default_text_is_refused():
    with pytest.raises(ValueError, match="needs the target's default text"):
        choose_trigger(_at, 2000, [1800], lambda s: Judged(1.0, 1.0, 1), "tier 0", max_peak="default")
