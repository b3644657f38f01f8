"""Experiment configs (`experiments/*.toml`): one validated pydantic tree, defaults in one place.

Every problem is reported as one line naming the file and the key, with exit code 2, before anything
is written.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from optimizer.agent.kinds import AGENTS
from optimizer.context.moves import HistoryMoveConfig, WriteMoveConfig
from optimizer.context.strategies import DETERMINISTIC, NoCompression, StrategyConfig
from optimizer.errors import ConfigError
from optimizer.evaluate.executors import ExecutorConfig, LocalExecutor
from optimizer.evaluate.pricing import CostConfig, PriceModel
from optimizer.llm.endpoint import EndpointConfig
from optimizer.search.proposers import DEFAULT_PROPOSERS, ProposerConfig
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


class TrackingConfig(_Strict):
    """MLflow. Empty `uri`: a sqlite store in the job's output directory (or MLFLOW_TRACKING_URI)."""

    enabled: bool = True
    uri: str = ""
    experiment: str = ""
    traces: bool = Field(True, description="Log one MLflow trace per episode.")


class AcceptanceConfig(_Strict):
    """Bars declared before the run; the report states pass or fail for each, per suite."""

    max_success_drop: float = Field(0.05, ge=0, le=1, description="Largest allowed success drop vs `none`.")
    min_peak_reduction: float = Field(0.3, ge=0, le=1, description="Smallest required peak-token reduction.")
    max_blocking: int = Field(0, ge=0, description="Blocking cases allowed (lost rule, duplicate write, ...).")


# What the summary-instruction search (`target` set) reads; any other key set beside a target is refused.
TARGET_KEYS = (
    "target",
    "rounds",
    "train_limit",
    "val_fraction",
    "test_limit",
    "screen_agent",
    "final_llm_limit",
    "deterministic_guideline",
)


class OptimizeConfig(_Strict):
    """The optimization loop: warm start, rounds, proposers, budgets, selection and the report."""

    target: TargetUnion | None = Field(
        None,
        description="A summarizer users already run (`langchain`, `anthropic`, or a plugin's) and its knobs: "
        "the job then learns that summarizer's instruction text instead of a guideline. A bare name is a table "
        "with only `type`; unset: the guideline search.",
    )

    search: Literal["acon", "gepa"] = Field("acon", description="`acon` (rounds of proposers) or `gepa` (texts).")
    rounds: int = Field(3, ge=1, le=20, description="Upper bound on rounds (UT then CO step per round).")
    proposers: tuple[ProposerConfig, ...] = Field(
        DEFAULT_PROPOSERS, description="Proposers the rounds run (deterministic and LLM; `[]` of LLM ones: ablation)."
    )
    llm_proposers: bool = Field(
        True,
        description="Run the proposers that call the optimizer LLM (false: deterministic only, the ablation).",
    )
    parents: int = Field(2, ge=1, le=10, description="Best candidates each round proposes from.")
    llm_parents: int = Field(
        1,
        ge=0,
        le=10,
        description="Of those, how many (the best with pairs) the LLM proposers see per round.",
    )
    warm_start: tuple[str, ...] = Field(
        DETERMINISTIC,
        description="Baselines translated into guidelines and screened with the seed before round 1.",
    )
    provoke: bool = Field(True, description="When no parent loses a task, screen one with its triggers lowered.")
    near_misses: bool = Field(
        True,
        description="Also learn from tasks a candidate solved only by recalling what it had cut.",
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
    max_compressor_calls: int | None = Field(None, gt=0, description="Budget of compressor calls for screens.")
    seed_test_limit: int | None = Field(
        None,
        gt=0,
        description="Test tasks the seed (an LLM strategy) is reported on, picked like the subset "
        "(None: every test task).",
    )
    max_candidates: int = Field(60, ge=1, description="Candidates the job screens at most.")
    select_top: int = Field(4, ge=1, description="Best train candidates (beyond the front) evaluated on validation.")
    screen_agent: str = Field("reference", description="Agent (tier) used to screen candidates.")
    confirm_top: int = Field(1, ge=0, description="Best validated candidates confirmed with the llm agent.")
    confirm_limit: int = Field(
        4,
        ge=0,
        description="Tasks per tier-1 confirmation, taken from the validation tasks (of train without them) in turns "
        "from each task family; "
        "the chosen guideline is the best confirmed at tier 1.",
    )
    max_agent_episodes: int = Field(40, ge=0, description="Budget of tier-1 (llm agent) episodes for the job.")
    tier1_repeats: int = Field(
        1,
        ge=1,
        le=5,
        description="Tier-1 episodes per task, each with its own sampling seed at `tier1_temperature`: a pair or "
        "a confirmation is then the agent's behaviour on most seeds, not one draw.",
    )
    tier1_temperature: float = Field(0.3, ge=0, le=2, description="Sampling temperature of tier-1 repeats.")
    mine_tier1: int = Field(
        0,
        ge=0,
        description="Train tasks each round's best parent and full context also run at tier 1 on, so that pairs "
        "come from the real agent (majority over `tier1_repeats`); 0: tier-0 pairs only.",
    )
    objective: Literal["constrained", "penalized", "success", "cost"] = Field(
        "constrained",
        description="`constrained`: lowest peak among candidates within the success tolerance of "
        "`none`; `penalized`: ACON's success − λ · peak/peak(none); `success`: success, then peak; "
        "`cost`: lowest projected cost per success (the `[cost]` headline model) within the tolerance.",
    )
    lam: float = Field(0.3, ge=0, description="λ of the penalized objective.")
    max_success_drop: float | None = Field(
        None,
        ge=0,
        le=1,
        description="Success tolerance of the constrained objective (None: the acceptance bar).",
    )
    final_strategies: tuple[str, ...] = Field(
        (*DETERMINISTIC, "oracle"),
        description="Baselines in the final test-split report, beside the seed and the chosen guideline.",
    )
    gepa_metric_calls: int = Field(60, gt=0, description='`search = "gepa"`: tier-0 episodes GEPA may run.')
    final_llm_limit: int = Field(0, ge=0, description="Test tasks also run with the llm agent in the report.")
    deterministic_guideline: str | None = Field(
        None,
        description="With a target: a guideline file with no LLM move (the best a guideline job found, e.g. "
        "guidelines/learned/builtin.md) reported beside the summarizer's texts on the same test tasks.",
    )
    max_guideline_chars: int = Field(6000, gt=200, description="Validator cap on a candidate's text.")

    @field_validator("screen_agent")
    @classmethod
    def _registered(cls, value: str) -> str:
        return registered_agent(value)

    @field_validator("target", mode="before")
    @classmethod
    def _named(cls, value: Any) -> Any:
        return {"type": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _target_reads(self) -> OptimizeConfig:
        # The summary search runs none of the guideline search's proposers, warm start or selection: a key of
        # theirs set beside a target would be silently ignored, so it is refused.
        if self.target is not None:
            # By value, not by `model_fields_set`: a dumped and revalidated config (`with_overrides`) sets them all.
            unread = [
                name
                for name, info in type(self).model_fields.items()
                if name not in TARGET_KEYS and getattr(self, name) != info.get_default(call_default_factory=True)
            ]
            if unread:
                raise ValueError(
                    f"'{unread[0]}' has no effect with a target (the summary-instruction search reads "
                    f"{', '.join(TARGET_KEYS[1:])})"
                )
        return self


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

    @property
    def out_dir(self) -> Path:
        return Path(self.out.replace("{name}", self.name))

    def with_overrides(self, **sections: dict[str, Any]) -> ExperimentConfig:
        """A copy with some keys replaced, validated again (used by CLI flags)."""
        data = self.model_dump(mode="python", round_trip=True)
        for section, values in sections.items():
            if isinstance(values, dict) and isinstance(data.get(section), dict):
                data[section] = {**data[section], **values}
            else:
                data[section] = values
        return _validate(data, source="command line")


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
    if kind == "value_error" and isinstance(error.get("input"), dict):  # a whole section: the message says it
        return f"'{where}': {error['msg'].removeprefix('Value error, ')}"
    return f"'{where}': {error['msg']} (got {error.get('input')!r})"[:300]


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
