"""Experiment configs (`experiments/*.toml`): one validated pydantic tree, defaults in one place.

Every problem is reported as one line naming the file and the key, with exit code 2, before anything
is written.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator, model_validator

from optimizer.agent.kinds import AGENTS
from optimizer.context.moves import HistoryMoveConfig, WriteMoveConfig
from optimizer.context.recall import RecallListing
from optimizer.context.strategies import DETERMINISTIC, NoCompression, StrategyConfig
from optimizer.errors import ConfigError
from optimizer.evaluate.executors import ExecutorConfig, LocalExecutor
from optimizer.evaluate.pricing import CostConfig, PriceModel
from optimizer.llm.endpoint import EndpointConfig
from optimizer.registry import PluginError
from optimizer.search.proposers import ProposerConfig
from optimizer.search.searches import SEARCHES, Search
from optimizer.summary.targets import TargetUnion
from optimizer.world.suite import SUITES, SuiteSource

if TYPE_CHECKING:  # a type checker sees the base; pydantic validates against the union built at run time
    SuiteConfig: TypeAlias = SuiteSource
else:
    SuiteConfig = SUITES.union()


def registered_agent(name: str) -> str:
    """`name` if an agent kind is registered under it (a plain string field: the kinds' options stay in `run`)."""
    if name not in AGENTS.names():
        raise ValueError(f"unknown agent {name!r}; known: {', '.join(AGENTS.names())}")
    return name


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RunConfig(_Strict):
    """Which tasks run, and how."""

    split: Literal["train", "test", "all"] = Field("test", description="Suite split to run.")
    limit: int | None = Field(None, gt=0, description="Run only the first N tasks of the split.")
    agent: str = Field("llm", description="A registered agent: `llm` (tier 1), `reference` (tier 0), or a plugin's.")
    recall: Literal["honest", "never", "peek"] = Field(
        "honest",
        description="Tier 0: the reference agent recalls from what its context shows (`honest`), never, "
        "or by peeking inside stored content (`peek`, the old behaviour, for comparison only).",
    )
    recall_probability: float = Field(
        1.0,
        ge=0.0,
        le=1.0,
        description="Tier 0, honest recall: the share of the recalls it could make that it makes (a draw per task "
        "and handle, the same every run); fit it to your model with benchmarks/bench_fidelity.py.",
    )
    action_format: Literal["auto", "native", "json"] = Field(
        "auto", description="`auto`: native tool calls if the agent endpoint declares them, else JSON."
    )
    concurrency: int = Field(1, ge=1, le=64, description="Episodes run at once (threads, or Ray tasks in flight).")
    executor: ExecutorConfig = Field(
        default_factory=LocalExecutor,
        description='Where episodes run: "local" (threads here) or "ray" (a '
        'cluster; `[run.executor]` type = "ray", address = "auto" for an existing one).',
    )
    max_total_steps: int = Field(200, gt=0, description="Hard cap on agent steps per episode.")

    @field_validator("agent")
    @classmethod
    def _registered(cls, value: str) -> str:
        return registered_agent(value)


class Endpoints(_Strict):
    """The three model roles; any of them may be `local`."""

    agent: EndpointConfig = Field(default_factory=EndpointConfig)
    compressor: EndpointConfig = Field(default_factory=EndpointConfig)
    optimizer: EndpointConfig = Field(default_factory=lambda: EndpointConfig(max_tokens=1024))


TraceMode: TypeAlias = Literal["reviewed", "all", "none"]


class TrackingConfig(_Strict):
    """MLflow. Empty `uri`: a sqlite store in the job's output directory (or MLFLOW_TRACKING_URI)."""

    enabled: bool = True
    uri: str = ""
    experiment: str = ""
    traces: TraceMode = Field(
        "reviewed",
        description="Which episodes get an MLflow trace: `reviewed` (tier-1 and test-split runs, and both episodes "
        "of every mined pair), `all` (also every tier-0 screen: the larger part of a long job's time on sqlite), "
        "`none`. `true` / `false` read as `all` / `none`.",
    )

    @field_validator("traces", mode="before")
    @classmethod
    def _trace_flag(cls, value: object) -> object:
        if isinstance(value, bool):
            return "all" if value else "none"
        return value


class AcceptanceConfig(_Strict):
    """Bars declared before the run; the report states pass or fail for each, per suite."""

    max_success_drop: float = Field(0.05, ge=0, le=1, description="Largest allowed success drop vs `none`.")
    min_peak_reduction: float = Field(0.3, ge=0, le=1, description="Smallest required peak-token reduction.")
    max_blocking: int = Field(0, ge=0, description="Blocking cases allowed (lost rule, duplicate write, ...).")


class BudgetConfig(_Strict):
    """`[optimize.budget]`: what the job may spend, whichever search runs."""

    rounds: int = Field(
        3,
        ge=1,
        le=20,
        description="Upper bound on rounds (acon: a UT then a CO step each; a target: the summary search's rounds).",
    )
    max_candidates: int = Field(60, ge=1, description="Candidates the job screens at most.")
    max_compressor_calls: int | None = Field(None, gt=0, description="Budget of compressor calls for screens.")
    max_agent_episodes: int = Field(40, ge=0, description="Budget of tier-1 (llm agent) episodes for the job.")
    llm_screen_limit: int = Field(
        4,
        ge=1,
        description="Train tasks an LLM-compressing candidate is screened on before the whole split.",
    )
    llm_subset_max_tokens: int = Field(
        4000,
        gt=0,
        description="Subset tasks' full-context peak at most this: a compressor call on a 20k-token "
        "output takes minutes on a CPU, so LLM candidates are screened first where a call is affordable.",
    )


class SelectionConfig(_Strict):
    """`[optimize.selection]`: how candidates are ranked, validated and confirmed, whichever search found them."""

    objective: Literal["constrained", "penalized", "success", "cost"] = Field(
        "constrained",
        description="`constrained`: lowest peak among candidates within the success tolerance of "
        "`none`; `penalized`: ACON's success − λ · peak/peak(none); `success`: success, then peak; "
        "`cost`: lowest projected cost per success (the `[cost]` headline model) within the tolerance.",
    )
    lam: float = Field(0.3, ge=0, description="λ of the penalized objective (and of GEPA's per-task score).")
    max_success_drop: float | None = Field(
        None,
        ge=0,
        le=1,
        description="Success tolerance of the constrained objective (None: the acceptance bar).",
    )
    select_top: int = Field(4, ge=1, description="Best train candidates (beyond the front) evaluated on validation.")
    confirm_top: int = Field(1, ge=0, description="Best validated candidates confirmed with the llm agent.")
    confirm_limit: int = Field(
        4,
        ge=0,
        description="Tasks per tier-1 confirmation, taken from the validation tasks (of train without them) in turns "
        "from each task family; "
        "the chosen guideline is the best confirmed at tier 1.",
    )
    tier1_repeats: int = Field(
        1,
        ge=1,
        le=5,
        description="Tier-1 episodes per task, each with its own sampling seed at `tier1_temperature`: a pair or "
        "a confirmation is then the agent's behaviour on most seeds, not one draw.",
    )
    tier1_temperature: float = Field(0.3, ge=0, le=2, description="Sampling temperature of tier-1 repeats.")
    confirm_peak_goal: float | None = Field(
        None,
        gt=0,
        le=1,
        description="With `confirm_top` of 2 or more, the last confirmation hedges: it goes to the candidate that "
        "keeps the most (the highest tier-0 peak) while staying at most this share of full context's peak, with "
        "success within the tolerance, of a move set the others lack. Tier 0 is most optimistic where guidelines "
        "cut most, so the real agent is also asked about the mildest cut that still meets the goal. None: off.",
    )
    confirm_baselines: int = Field(
        0,
        ge=0,
        le=5,
        description="Warm-start baselines the real agent also confirms beside the search's own candidates: of "
        "those that cut and keep full context's success at tier 0 on the confirmation split, the lowest peaks "
        "first. One of them is chosen when it does best at tier 1, so the job never picks a child that the "
        "guideline it grew from beats with the real agent.",
    )


class ReportConfig(_Strict):
    """`[optimize.report]`: what the test-split report runs beside the chosen guideline."""

    final_strategies: tuple[str, ...] = Field(
        (*DETERMINISTIC, "oracle"),
        description="Baselines in the final test-split report, beside the seed and the chosen guideline.",
    )
    final_llm_limit: int = Field(0, ge=0, description="Test tasks also run with the llm agent in the report.")
    final_llm_seeds: int = Field(
        1,
        ge=1,
        description="Sampling seeds the llm agent runs each of those tasks with (1: one run as configured; more: "
        "seeds 1..N at temperature 0.3, and the paired intervals resample tasks by their share over the seeds).",
    )
    seed_test_limit: int | None = Field(
        None,
        gt=0,
        description="Test tasks the seed (an LLM strategy) is reported on, picked like the subset "
        "(None: every test task).",
    )
    deterministic_guideline: str | None = Field(
        None,
        description="With a target: a guideline file with no LLM move (the best a guideline job found, e.g. "
        "guidelines/learned/builtin.md) reported beside the summarizer's texts on the same test tasks.",
    )


# Sections every job has; beside them, one section per registered search, named by it.
SECTIONS: dict[str, type[_Strict]] = {"budget": BudgetConfig, "selection": SelectionConfig, "report": ReportConfig}

# What the summary-instruction search (`target` set) reads; any other key set beside a target is refused.
TARGET_KEYS = (
    "target",
    "train_limit",
    "val_fraction",
    "test_limit",
    "screen_agent",
    "budget.rounds",
    "report.final_llm_limit",
    "report.final_llm_seeds",
    "report.deterministic_guideline",
)

# The keys `[optimize]` held before it had sections, and where each is now: one line names the new place.
MOVED = {
    **{key: ("budget", key) for key in BudgetConfig.model_fields},
    **{key: ("selection", key) for key in SelectionConfig.model_fields},
    **{key: ("report", key) for key in ReportConfig.model_fields},
    **{
        key: ("acon", key)
        for key in (
            "proposers",
            "llm_proposers",
            "parents",
            "llm_parents",
            "provoke",
            "near_misses",
            "mine_tier1",
            "max_guideline_chars",
        )
    },
    "gepa_metric_calls": ("gepa", "metric_calls"),
}


class OptimizeSettings(_Strict):
    """`[optimize]`: what the job learns on and which search runs; the rest in sections. The search's own
    settings are its section, `[optimize.<search>]` (`OptimizeConfig` adds one per registered search)."""

    target: TargetUnion | None = Field(
        None,
        description="A summarizer users already run (`langchain`, `anthropic`, or a plugin's) and its knobs: "
        "the job then learns that summarizer's instruction text instead of a guideline. A bare name is a table "
        "with only `type`; unset: the guideline search.",
    )
    search: str = Field(
        "acon",
        description="A registered search: `acon` (rounds of proposers), `gepa` (the seed's texts), or a plugin's; "
        "its settings are the section of its name.",
    )
    warm_start: tuple[str, ...] = Field(
        DETERMINISTIC,
        description="Baselines translated into guidelines, or guideline files (learned on another suite), "
        "screened with the seed before the search; each is a candidate and a parent like any other.",
    )
    train_limit: int | None = Field(None, gt=0, description="Train tasks used (None: the whole split).")
    val_fraction: float = Field(
        0.34,
        ge=0.0,
        lt=1.0,
        description="Share of the train tasks held out to choose the guideline on (GEPA's "
        "valset); candidates are mined on the rest. 0: choose on the train tasks (reported as such).",
    )
    test_limit: int | None = Field(None, gt=0, description="Test tasks in the final report.")
    screen_agent: str = Field("reference", description="Agent (tier) used to screen candidates.")
    recall_tool: RecallListing | None = Field(
        None,
        description="How every guideline the job screens lists `recall` (set on the seed and the baselines; their "
        "children inherit it): `never` for an agent that does not recall (`run.recall_probability = 0`), where "
        "a tool it cannot use only distracts it. None: each keeps its own (the seed's; `once_cleared` by default).",
    )
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    selection: SelectionConfig = Field(default_factory=SelectionConfig)
    report: ReportConfig = Field(default_factory=ReportConfig)

    @field_validator("screen_agent")
    @classmethod
    def _registered(cls, value: str) -> str:
        return registered_agent(value)

    @field_validator("search")
    @classmethod
    def _registered_search(cls, value: str) -> str:
        if value not in SEARCHES.names():
            raise ValueError(f"unknown search {value!r}; known: {', '.join(SEARCHES.names())}")
        return value

    @field_validator("target", mode="before")
    @classmethod
    def _named(cls, value: Any) -> Any:
        return {"type": value} if isinstance(value, str) else value

    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data: Any) -> Any:
        for key in data if isinstance(data, dict) else ():
            if key in MOVED:
                section, name = MOVED[key]
                renamed = "" if name == key else f" as '{name}'"
                raise ValueError(f"'{key}' moved to [optimize.{section}]{renamed}")
        return data

    def chosen_search(self) -> Search:
        """The search that runs, with its settings: the section named by `search`."""
        section = getattr(self, self.search)
        if not isinstance(section, Search):
            raise TypeError(f"optimize.{self.search} is not a search section")  # the fields are built from SEARCHES
        return section

    def confirmation_episodes(self) -> int:
        """Tier-1 episodes the confirmation needs at most: full context, each of the `confirm_top` candidates and
        the `confirm_baselines` on `confirm_limit` tasks, `tier1_repeats` seeds each. Mining at tier 1 may not spend
        them."""
        selection = self.selection
        if selection.confirm_top == 0 or selection.confirm_limit == 0:
            return 0
        confirmed = selection.confirm_top + selection.confirm_baselines + 1
        return confirmed * selection.confirm_limit * selection.tier1_repeats

    def changed(self) -> list[str]:
        """The keys (`budget.rounds`, a search's `acon.parents`) set to other than their default."""
        default = type(self).model_construct().model_dump()
        out = []
        for name, value in self.model_dump().items():
            if isinstance(value, dict) and (name in SECTIONS or name in SEARCHES.names()):
                out += [f"{name}.{key}" for key, inner in value.items() if inner != default[name][key]]
            elif value != default[name]:
                out.append(name)
        return out

    @model_validator(mode="after")
    def _reads_every_key(self) -> OptimizeSettings:
        # By value, not by `model_fields_set`: a dumped and revalidated config (`with_overrides`) sets them all.
        changed = self.changed()
        if self.target is not None:
            # The summary search runs none of the guideline search's proposers, warm start or selection: a key of
            # theirs set beside a target would be silently ignored, so it is refused.
            unread = [key for key in changed if key not in TARGET_KEYS]
            if unread:
                raise ValueError(
                    f"'{unread[0]}' has no effect with a target (the summary-instruction search reads "
                    f"{', '.join(TARGET_KEYS[1:])})"
                )
        # Only the chosen search reads its section: another's, set, would be silently ignored.
        idle = [
            key for key in changed if key.split(".")[0] in SEARCHES.names() and not key.startswith(f"{self.search}.")
        ]
        if idle:
            raise ValueError(f"'{idle[0]}' has no effect with search = {self.search!r}")
        agent_episodes, confirmation = self.budget.max_agent_episodes, self.confirmation_episodes()
        if 0 < agent_episodes < confirmation:
            # Otherwise the job would run its tier-1 budget dry and choose by tier 0 alone, saying so only in a log.
            raise ValueError(
                f"budget.max_agent_episodes = {agent_episodes} cannot pay for the tier-1 confirmation "
                f"({confirmation} episodes: (confirm_top + confirm_baselines + 1) x confirm_limit x tier1_repeats)"
            )
        return self


def _optimize_config() -> type[OptimizeSettings]:
    """`OptimizeSettings` with a section per registered search, named by it (`[optimize.acon]`)."""
    sections: dict[str, Any] = {}
    for cls in SEARCHES.classes():
        name = SEARCHES.tag(cls)
        if name in OptimizeSettings.model_fields:
            raise PluginError(f"search {name!r} ({cls.__module__}.{cls.__name__}) is named like a key of [optimize]")
        required = [field for field, info in cls.model_fields.items() if info.is_required()]
        if required:
            raise PluginError(f"search {name!r}: '{required[0]}' needs a default (a search's section may be left out)")
        sections[str(name)] = (cls, Field(default_factory=cls, description=(cls.__doc__ or "").strip().split("\n")[0]))
    return create_model("OptimizeConfig", __base__=OptimizeSettings, **sections)


if TYPE_CHECKING:  # a type checker sees the shared settings; pydantic validates every search's section too
    OptimizeConfig: TypeAlias = OptimizeSettings
else:
    OptimizeConfig = _optimize_config()


class ExperimentConfig(_Strict):
    name: str = Field(..., min_length=1)
    out: str = Field("runs/{name}", description="Output directory ({name} is replaced).")
    seed: int = 0
    suite: SuiteConfig
    run: RunConfig = Field(default_factory=RunConfig)
    strategy: StrategyConfig = Field(default_factory=NoCompression)
    guideline: str = Field("guidelines/seed/seed.md", description="Seed guideline for `optimize`.")
    endpoints: Endpoints = Field(default_factory=Endpoints)
    tracking: TrackingConfig = Field(default_factory=TrackingConfig)
    optimize: OptimizeConfig = Field(default_factory=OptimizeConfig)
    acceptance: AcceptanceConfig = Field(default_factory=AcceptanceConfig)
    cost: CostConfig = Field(default_factory=CostConfig)

    @field_validator("name")
    @classmethod
    def _one_path_part(cls, value: str) -> str:
        # The name becomes a directory under `runs/` (and under `out` via {name}): `../x` would write outside.
        if "/" in value or "\\" in value or value.strip() in (".", "..") or "\x00" in value:
            raise ValueError(f"name {value!r} must be one path part (no '/', '\\', '.' or '..')")
        return value

    @model_validator(mode="after")
    def _draws_need_a_temperature(self) -> ExperimentConfig:
        target = self.optimize.target
        if target is not None and target.screen_samples > 1 and self.endpoints.compressor.temperature == 0.0:
            raise ValueError(
                "optimize.target.screen_samples above 1 needs [endpoints.compressor] temperature above 0 "
                "(at 0 every draw is the same summary)"
            )
        return self

    @property
    def out_dir(self) -> Path:
        return Path(self.out.replace("{name}", self.name))

    def with_overrides(self, **sections: dict[str, Any]) -> ExperimentConfig:
        """A copy with some keys replaced, validated again (used by CLI flags). A table merges into the table it
        replaces (`optimize={"acon": {"parents": 3}}` keeps the other keys of `[optimize.acon]`)."""
        current = self.model_dump(mode="python", round_trip=True)
        return _validate(merged_tables(current, sections), source="command line")


def merged_tables(data: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """`data` with `changes`, a table merged into the table of the same name (TOML sections nest)."""
    out = dict(data)
    for key, value in changes.items():
        current = out.get(key)
        out[key] = merged_tables(current, value) if isinstance(value, dict) and isinstance(current, dict) else value
    return out


def load_experiment(path: str | Path) -> ExperimentConfig:
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read config ({type(exc).__name__})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    return _validate(data, source=str(path))


def _validate(data: dict[str, Any], *, source: str) -> ExperimentConfig:
    try:
        return ExperimentConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {describe_error(exc)}") from None


def describe_error(exc: ValidationError) -> str:
    """The first validation error as `key.path: what is wrong`."""
    error = exc.errors()[0]
    loc = [str(p) for i, p in enumerate(error["loc"]) if not (i > 0 and isinstance(p, str) and p in _UNION_TAGS)]
    where = ".".join(loc) or "<root>"
    kind = error["type"]
    if kind == "extra_forbidden":
        return f"unknown key '{where}'"
    if kind == "missing":
        return f"missing key '{where}'"
    if kind == "union_tag_invalid":
        return f"'{where}': {error['msg']}"
    message = error["msg"].removeprefix("Value error, ")  # pydantic's wrapper around our own validators' words
    if kind == "value_error" and isinstance(error.get("input"), dict):  # a whole section: the message says it
        return f"'{where}': {message}"
    return f"'{where}': {message} (got {error.get('input')!r})"[:300]


def _tags(union: Any, field: str = "type") -> set[str]:
    return {cls.model_fields[field].default for cls in get_args(get_args(union)[0])}


# Discriminated unions put the chosen tag into an error's location (`strategy.fifo.keep_last`); a user
# wrote `strategy.keep_last`. Every tag comes from its union, so a new strategy, suite, move or proposer
# is covered without an edit here.
_UNION_TAGS = (
    _tags(StrategyConfig)
    | _tags(SuiteConfig)
    | _tags(ProposerConfig)
    | _tags(ExecutorConfig)
    | _tags(TargetUnion)
    | _tags(WriteMoveConfig, "move")
    | _tags(HistoryMoveConfig, "move")
    | _tags(PriceModel, "cache")
    | {"function-after", "str", "Guideline"}
)
