"""The summarizer targets a job can learn instructions for: `[optimize.target]`, one class per target.

A target config names a production summarizer and the knobs it has (trigger, keep); `strategy(text)`
builds the strategy that runs that summarizer's policy with `text` as its instructions (None: the
target's own default). The configs are light on purpose: the experiment config validates against their
union at every `acon` start, so a target's heavy library (LangChain, the Anthropic SDK) is imported only
when its strategy is built. acon's targets are entry points of the `acon.targets` group like every other
extension point, so a plugin's summarizer (an OpenHands condenser, say) joins the same union.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, field_validator, model_validator

from optimizer.jsontypes import JSONObject
from optimizer.registry import Registry

if TYPE_CHECKING:
    from optimizer.summary.defaults import TargetDefault
    from optimizer.summary.target_base import SummaryTarget


# How the search runs, not what the summarizer is: never a knob in a report or an export.
SEARCH_SETTINGS = (
    "proposals",
    "paraphrases",
    "sections",
    "screen_samples",
    "minibatch",
    "confirm_seeds",
    "confirm_tasks",
    "trigger_choices",
    "max_peak_tokens",
    "default_triggers",
)


class TargetConfig(BaseModel, ABC):
    """A production summarizer with free instruction text, and how the search over that text runs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str
    proposals: int = Field(2, ge=1, le=10, description="UT rewrites the optimizer writes per round.")
    paraphrases: int = Field(
        0,
        ge=0,
        le=10,
        description="Sentences of the best text the optimizer says otherwise per round (no instruction added; the "
        "child must keep more facts per train task than its parent by a paired interval above zero). 0: none.",
    )
    sections: bool = Field(
        False,
        description="Also ask the optimizer, per round, for a new section of the start's layout for a kind of fact "
        "the summaries lost that no section names (a child gated like a UT rewrite). Off: with the local 1.5B "
        "optimizer and the 0.5B summarizer its one section that passed the checks kept no more facts.",
    )
    screen_samples: int = Field(
        1,
        ge=1,
        le=8,
        description="Summaries the search draws of each history, one per sampling seed 1..N at the compressor's "
        "temperature (which must then be above 0), each task's facts pooled over its draws, in every screen of the "
        "search and of the test rows; tier 0 and tier 1 run once as configured. At temperature 0 a text's count is "
        "one decoding path, which a one-word rewording can switch for every history. 1: one draw as configured.",
    )
    minibatch: int = Field(4, ge=1, le=20, description="Lost facts shown to the optimizer per UT rewrite.")
    confirm_seeds: int = Field(
        0,
        ge=0,
        le=5,
        description="Seeds of the real agent (`[endpoints.agent]`) on the validation tasks: a rewrite the screen "
        "would take must pass at least as many of those episodes as its parent. 0: the screen alone decides.",
    )
    confirm_tasks: int | None = Field(
        None,
        ge=1,
        le=50,
        description="Validation tasks the confirmation runs on: the first this many that full context solves at tier "
        "1 on every seed (None: every such task).",
    )
    trigger_choices: tuple[PositiveInt, ...] = Field(
        (),
        max_length=6,
        description="Other triggers (tokens) the job may choose beside the text: each is judged with the learned "
        "text (tier 1 on the confirmation tasks when confirm_seeds > 0, else tier 0 on the validation tasks) and "
        "the most successful wins, the lower mean peak breaking a tie. Empty: the trigger stays `trigger_tokens`.",
    )
    max_peak_tokens: PositiveInt | Literal["default"] | None = Field(
        None,
        description="With trigger_choices: a trigger whose trials' mean peak (the server's token count) is above "
        'this is not chosen; the asked trigger stays when every trial is. "default": the goal is the target\'s '
        "default text's own mean peak at the asked trigger, judged alike (the learned text may cost no more peak "
        "than what it replaces). None: no goal, and the most successful trigger wins even where it never summarizes.",
    )

    default_triggers: tuple[PositiveInt, ...] = Field(
        (),
        max_length=6,
        description="Triggers the target's default text also runs at on the test tasks, each a `default@T` row: "
        "the report compares the learned text with the one that peaks least while peaking at least as high "
        "(success at equal peak, per tier). Empty: the default runs at the learned text's trigger only.",
    )

    @field_validator("max_peak_tokens", mode="before")
    @classmethod
    def _a_count_or_default(cls, value: object) -> object:
        # Without this a misspelt "default" reads as the union's int branch failing to parse a string.
        if isinstance(value, str) and value != "default":
            raise ValueError('a positive token count or "default"')
        return value

    @model_validator(mode="after")
    def _has_a_trigger(self) -> TargetConfig:
        for setting in ("trigger_choices", "default_triggers"):
            if getattr(self, setting) and "trigger_tokens" not in type(self).model_fields:
                raise ValueError(f"{setting}: the {self.type} target has no trigger_tokens to choose")
        return self

    def at_trigger(self, trigger: int) -> TargetConfig:
        """The same target with `trigger` as its trigger (and no choices left to make)."""
        choices_made = {"trigger_choices": (), "max_peak_tokens": None, "default_triggers": ()}
        return self.model_copy(update={"trigger_tokens": trigger, **choices_made})

    @abstractmethod
    def strategy(self, instructions: str | None) -> SummaryTarget:
        """The target's policy with `instructions` (None: the target's own default text)."""

    @abstractmethod
    def default(self) -> TargetDefault:
        """The target's default instructions as the installed package has them (or why they are absent)."""

    def knobs(self) -> JSONObject:
        """The target's settings, as the report and the export's provenance show them."""
        return self.model_dump(exclude={"type", *SEARCH_SETTINGS}, exclude_none=True)


TARGETS: Registry[TargetConfig] = Registry("acon.targets", TargetConfig, what="target")
if TYPE_CHECKING:  # a type checker sees the base; pydantic validates against the union built at run time
    TargetUnion: TypeAlias = TargetConfig
else:
    TargetUnion = TARGETS.union()
