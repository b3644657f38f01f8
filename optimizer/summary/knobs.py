"""The target's trigger, chosen beside its text: what no instruction text can fix.

A production summarizer re-summarizes whenever the messages it keeps after a summary (plus the summary) already
reach its trigger. On the long-horizon suite at LangChain's trigger 2,000 / keep 4, two 1,200-token product sheets
kept the compare tasks above the trigger, so every call summarized again, the real agent re-read the sheets until
its step limit, and no text or keep setting tried changed that. The trigger is a setting the target has, so the
job may choose it: each trigger the user allows is judged with the learned text (the real agent on the
confirmation tasks when the job confirms, else tier 0 on the validation tasks), and the most successful wins,
the lower mean peak breaking a tie. Without a peak goal that rule prefers a trigger at which nothing is summarized:
at LangChain's 3,000 (its approximate count runs below the server's) the test tasks never summarized and every row
equalled no compression. So `max_peak_tokens` (the server's count, as every peak acon reports) leaves out a trigger
whose trials peaked above it; the user's own trigger stays when none is left. Every trial is reported.

The goal that answers "does the learned text beat the default at no more peak" is the default's own peak:
`max_peak_tokens = "default"` judges the target's default text at the asked trigger once, by the same judge on
the same tasks, and takes its mean peak as the goal. The learned text's longer summaries raised the tier-1 peak
8 % above the default's at the same trigger; under this goal it may only take a trigger at which that gap is gone.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from optimizer.jsontypes import JSONObject
from optimizer.stats import said_gap
from optimizer.summary.target_base import SummaryTarget


@dataclass(frozen=True)
class Judged:
    """A strategy's success share and mean peak over `episodes` episodes."""

    success: float
    peak: float
    episodes: int

    @classmethod
    def of(cls, successes: Sequence[bool], peaks: Sequence[float]) -> Judged:
        """Over one episode per entry (at least one)."""
        return cls(sum(successes) / len(successes), statistics.mean(peaks), len(successes))


Judge = Callable[[SummaryTarget], Judged]
PeakGoal = int | Literal["default"] | None  # a token count, the default text's own peak, or no goal
DEFAULT_PEAK: Literal["default"] = "default"


@dataclass(frozen=True)
class TriggerTrial:
    trigger: int
    judged: Judged

    def to_dict(self) -> JSONObject:
        j = self.judged
        return {"trigger": self.trigger, "success": j.success, "peak_mean": j.peak, "episodes": j.episodes}

    def describe(self) -> str:
        j = self.judged
        return f"{self.trigger:,}: success {j.success:.2f} over {j.episodes} episodes, mean peak {j.peak:,.0f}"


@dataclass(frozen=True)
class TriggerChoice:
    asked: int  # the user's trigger, where the text was learned
    chosen: int
    judged_by: str  # which agent on which tasks, in words
    trials: tuple[TriggerTrial, ...]
    max_peak: int | None = None  # the peak goal a trial had to meet to be chosen (None: none)
    max_peak_from: Judged | None = None  # the default text's judgement at the asked trigger, when it set the goal

    def to_dict(self) -> JSONObject:
        return {
            "asked": self.asked,
            "chosen": self.chosen,
            "judged_by": self.judged_by,
            "max_peak_tokens": self.max_peak,
            "max_peak_from_default": None
            if self.max_peak_from is None
            else TriggerTrial(self.asked, self.max_peak_from).to_dict(),
            "trials": [t.to_dict() for t in self.trials],
        }

    def describe(self) -> str:
        tried = "; ".join(t.describe() for t in self.trials)
        goal = f" under a mean peak of {self.max_peak:,}" if self.max_peak is not None else ""
        if self.max_peak_from is not None:
            goal += f" (the default text's at {self.asked:,}, success {self.max_peak_from.success:.2f})"
        return f"trigger {self.chosen:,} chosen (asked {self.asked:,}){goal}, judged by {self.judged_by}: {tried}"


def choose_trigger(
    at_trigger: Callable[[int], SummaryTarget],
    asked: int,
    choices: Sequence[int],
    judge: Judge,
    judged_by: str,
    log: Callable[[str], None] = lambda _: None,
    max_peak: PeakGoal = None,
    default_at: Callable[[int], SummaryTarget] | None = None,
) -> TriggerChoice:
    """Each of `asked` and `choices` judged once; of those within `max_peak`, the most successful, then the lower
    peak, then the user's own (the user's own when none is within it). `max_peak = "default"` takes the goal from
    `default_at(asked)` (the target's default text), judged once before the trials."""
    from_default = None
    goal: int | None
    if isinstance(max_peak, str):  # DEFAULT_PEAK, the only text a goal may be
        if default_at is None:
            raise ValueError('max_peak "default" needs the target\'s default text to judge')
        from_default = judge(default_at(asked))
        goal = math.ceil(from_default.peak)  # an equal peak is within it
        log(f"peak goal: the default text at {asked:,}, success {from_default.success:.2f}, mean peak {goal:,}")
    else:
        goal = max_peak
    trials = []
    for trigger in dict.fromkeys((asked, *choices)):
        trial = TriggerTrial(trigger, judge(at_trigger(trigger)))
        log(f"trigger {trial.describe()}")
        trials.append(trial)
    within = [t for t in trials if goal is None or t.judged.peak <= goal]
    if not within:
        log(f"no trigger kept the mean peak within {goal:,}: the asked {asked:,} stays")
        return TriggerChoice(asked, asked, judged_by, tuple(trials), goal, from_default)
    best = max(within, key=lambda t: (t.judged.success, -t.judged.peak, t.trigger == asked))
    return TriggerChoice(asked, best.trigger, judged_by, tuple(trials), goal, from_default)


def equal_peak(default_peaks: Mapping[str, float], learned_peak: float) -> str | None:
    """Of the default text's rows (name -> mean peak, one per trigger it ran at), the one that peaks least while
    peaking at least as high as the learned text: the default given no less context than the learned text, so a
    success gap between the two was not bought with peak. None when every default row peaks lower. The other way
    round from `max_peak_tokens`, which moves the learned text's trigger: a text that keeps facts writes longer
    summaries, and on the long-horizon suite no trigger brought its peak down to the default's."""
    higher = {name: peak for name, peak in default_peaks.items() if peak >= learned_peak}
    return min(higher, key=higher.__getitem__) if higher else None


def equal_peak_said(
    learned: tuple[float, float], name: str | None, other: tuple[float, float] | None, gap: Mapping[str, float] | None
) -> str:
    """One tier's comparison at equal peak, as the report and the benchmark print it: (success, mean peak) of the
    learned text and of the default row `name` that `equal_peak` chose, and their paired success gap."""
    if name is None or other is None:
        return f"no default row peaks as high as learned ({learned[1]:,.0f})"
    said = f"; learned-{name} {said_gap(gap)}" if gap else ""
    return f"learned {learned[0]:.2f} at {learned[1]:,.0f}, {name} {other[0]:.2f} at {other[1]:,.0f}{said}"
