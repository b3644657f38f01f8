"""The final report as a typed tree: what `build_report` returns and every renderer reads.

Each node carries its own codec (`to_dict` / `from_dict`). `to_dict` writes the keys `report.json` has always
had, in the same order, so readers of older files and the documented shape stay valid; optional figures a
row does not have are left out rather than written as null, as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace

from optimizer.evaluate.scores import Scores
from optimizer.jsontypes import (
    JSON,
    JSONObject,
    JSONRecord,
    dict_of,
    dict_of_records,
    flag,
    integer,
    list_of,
    list_of_records,
    number,
    obj,
    optional_integer,
    optional_number,
    optional_text,
    record,
    text,
)
from optimizer.report.checks import Acceptance, Interval, Paired, interval
from optimizer.report.front import Point

# What the reference agent (tier 0) does not model; every report repeats it next to tier-0 figures.
TIER0_LIMITS = (
    "whether a model notices a fact that is present but buried (position and length effects)",
    "whether a model reads a summary correctly, or acts on a paraphrase of a rule",
    "whether a model would recall a cleared result: the reference agent recalls whenever a placeholder "
    "names the call the missing fact came from (the `never recalls` column is the other extreme)",
    "values the task's reference does not mark as needed (literals the agent can take from the user's "
    "words or from a tool's schema are never needs)",
    "tool calls outside the reference solution (exploration, retries a model would make)",
)


@dataclass(frozen=True)
class Figures:
    """One strategy's headline figures on a split (`Scores.headline`)."""

    tasks: int
    success: float
    success_ci: Interval
    peak_tokens_mean: float
    peak_tokens_ci: Interval
    peak_tokens_max: float
    recall_calls: int
    success_without_recall: float
    compressor_tokens: int
    compressor_calls: int
    blocking: int
    cost_per_success: float | None
    facts_visible: float | None
    episodes: int | None = None  # tasks x seeds when runs on several sampling seeds were pooled

    @classmethod
    def of(cls, scores: Scores) -> Figures:
        return cls.from_dict(scores.headline())

    def to_dict(self) -> JSONObject:
        out: JSONObject = {f.name: getattr(self, f.name) for f in fields(self)}
        out["success_ci"], out["peak_tokens_ci"] = list(self.success_ci), list(self.peak_tokens_ci)
        return out

    @classmethod
    def from_dict(cls, data: JSONRecord) -> Figures:
        return cls(
            tasks=integer(data["tasks"]),
            success=number(data["success"]),
            success_ci=interval(data["success_ci"]),
            peak_tokens_mean=number(data["peak_tokens_mean"]),
            peak_tokens_ci=interval(data["peak_tokens_ci"]),
            peak_tokens_max=number(data["peak_tokens_max"]),
            recall_calls=integer(data["recall_calls"]),
            success_without_recall=number(data["success_without_recall"]),
            compressor_tokens=integer(data["compressor_tokens"]),
            compressor_calls=integer(data["compressor_calls"]),
            blocking=integer(data["blocking"]),
            cost_per_success=optional_number(data["cost_per_success"]),
            facts_visible=optional_number(data["facts_visible"]),
            episodes=optional_integer(data.get("episodes")),
        )


# The run-summary figures a report row carries besides the headline (cost, cache, infrastructure).
SUMMARY_KEYS = (
    "dependency_mean",
    "total_tokens",
    "cache_breaks",
    "cache_breaks_per_episode",
    "duplicate_writes",
    "infra_errors",
    "cost_source",
    "projected",
)


@dataclass(frozen=True)
class BothSolved:
    """Mean peaks of the chosen guideline and another strategy over the tasks both solved."""

    tasks: int
    chosen_peak_mean: float | None
    peak_mean: float | None

    def to_dict(self) -> JSONObject:
        return {"tasks": self.tasks, "chosen_peak_mean": self.chosen_peak_mean, "peak_mean": self.peak_mean}

    @classmethod
    def from_dict(cls, data: JSONRecord) -> BothSolved:
        peaks = optional_number(data["chosen_peak_mean"]), optional_number(data["peak_mean"])
        return cls(integer(data["tasks"]), *peaks)


@dataclass(frozen=True)
class Behaviour:
    """Of the tasks where tier 0 saw every needed fact, the share the tier-1 agent solved."""

    tasks: int
    success: float | None

    def to_dict(self) -> JSONObject:
        return {"tasks": self.tasks, "success": self.success}

    @classmethod
    def from_dict(cls, data: JSONRecord) -> Behaviour:
        return cls(integer(data["tasks"]), optional_number(data["success"]))


@dataclass(frozen=True)
class ReportRow:
    """One strategy on the test tasks at one tier."""

    strategy: str
    kind: str  # learned | seed | control | baseline | oracle | deterministic
    tier: str  # reference | llm
    version: str | None
    figures: Figures
    summary: Mapping[str, JSON]  # SUMMARY_KEYS, as the evaluation's run summary had them
    peak_vs_none: float | None = None
    both_solved: BothSolved | None = None
    behaviour: Behaviour | None = None  # tier-1 rows with a tier-0 row of the same strategy

    def to_dict(self) -> JSONObject:
        out: JSONObject = {
            "strategy": self.strategy,
            "kind": self.kind,
            "tier": self.tier,
            "version": self.version,
            **self.figures.to_dict(),
            "summary": dict(self.summary),
        }
        if self.peak_vs_none is not None:
            out["peak_vs_none"] = self.peak_vs_none
        if self.both_solved is not None:
            out["both_solved"] = self.both_solved.to_dict()
        if self.behaviour is not None:
            out["behaviour"] = self.behaviour.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: JSONRecord) -> ReportRow:
        both, acted, summary = data.get("both_solved"), data.get("behaviour"), record(data["summary"])
        return cls(
            strategy=text(data["strategy"]),
            kind=text(data["kind"]),
            tier=text(data["tier"]),
            version=optional_text(data["version"]),
            figures=Figures.from_dict(data),
            summary={k: summary.get(k) for k in SUMMARY_KEYS},
            peak_vs_none=optional_number(data.get("peak_vs_none")),
            both_solved=BothSolved.from_dict(record(both)) if both is not None else None,
            behaviour=Behaviour.from_dict(record(acted)) if acted is not None else None,
        )

    def seen_at_tier0(self, facts_visible: float | None, behaviour: Behaviour) -> ReportRow:
        """This tier-1 row with the data flow measured on its tier-0 twin and the behaviour apart from it."""
        return replace(self, figures=replace(self.figures, facts_visible=facts_visible), behaviour=behaviour)


@dataclass(frozen=True)
class ChosenGuideline:
    """The guideline the job chose, and its tier-0 test row when the report has one."""

    version: str
    name: str
    origin: str
    round: int | None = None
    path: str | None = None
    row: ReportRow | None = None

    def to_dict(self) -> JSONObject:
        out: JSONObject = {"version": self.version, "name": self.name, "origin": self.origin}
        out.update({k: v for k, v in (("round", self.round), ("path", self.path)) if v is not None})
        return {**out, **(self.row.to_dict() if self.row else {})}

    @classmethod
    def from_dict(cls, data: JSONRecord) -> ChosenGuideline:
        return cls(
            version=text(data["version"]),
            name=text(data["name"]),
            origin=text(data["origin"]),
            round=optional_integer(data.get("round")),
            path=optional_text(data.get("path")),
            row=ReportRow.from_dict(data) if "strategy" in data else None,
        )


@dataclass(frozen=True)
class Cut:
    """The headline: the chosen guideline's tier-0 mean peak and success against `none` and the best baseline."""

    peak: float
    success: float
    none_peak: float
    none_success: float
    vs_none: float | None
    best_baseline: str | None = None
    best_peak: float | None = None
    best_success: float | None = None
    vs_best: float | None = None

    def to_dict(self) -> JSONObject:
        out: JSONObject = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.best_baseline is None:
            for key in ("best_baseline", "best_peak", "best_success", "vs_best"):
                del out[key]
        return out

    @classmethod
    def from_dict(cls, data: JSONRecord) -> Cut | None:
        # An empty cut: the report had no tier-0 row for the chosen guideline or `none`.
        if not data:
            return None
        return cls(
            peak=number(data.get("peak")),
            success=number(data.get("success")),
            none_peak=number(data.get("none_peak")),
            none_success=number(data.get("none_success")),
            vs_none=optional_number(data.get("vs_none")),
            best_baseline=optional_text(data.get("best_baseline")),
            best_peak=optional_number(data.get("best_peak")),
            best_success=optional_number(data.get("best_success")),
            vs_best=optional_number(data.get("vs_best")),
        )


@dataclass(frozen=True)
class Budget:
    """What the job spent of its limits."""

    candidates: int
    agent_episodes: int
    compressor_calls: int
    optimizer_tokens: int

    def to_dict(self) -> JSONObject:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: JSONRecord) -> Budget:
        return cls(
            candidates=integer(data["candidates"]),
            agent_episodes=integer(data["agent_episodes"]),
            compressor_calls=integer(data["compressor_calls"]),
            optimizer_tokens=integer(data["optimizer_tokens"]),
        )


@dataclass(frozen=True)
class Infrastructure:
    """Model faults over the whole job (`accounting.infrastructure`)."""

    retried_calls: int
    retries: int
    excluded_episodes: int
    redone_episodes: int
    errors_by_kind: Mapping[str, int]
    malformed_agent_replies: int
    failed_optimizer_calls: int
    refused_proposals: int

    def to_dict(self) -> JSONObject:
        out: JSONObject = {f.name: getattr(self, f.name) for f in fields(self)}
        out["errors_by_kind"] = dict(self.errors_by_kind)
        return out

    @classmethod
    def from_dict(cls, data: JSONRecord) -> Infrastructure:
        return cls(
            retried_calls=integer(data["retried_calls"]),
            retries=integer(data["retries"]),
            excluded_episodes=integer(data["excluded_episodes"]),
            redone_episodes=integer(data["redone_episodes"]),
            errors_by_kind=dict_of(data["errors_by_kind"], integer),
            malformed_agent_replies=integer(data["malformed_agent_replies"]),
            failed_optimizer_calls=integer(data["failed_optimizer_calls"]),
            # Reports written before refused proposals were counted lack the key.
            refused_proposals=integer(data.get("refused_proposals", 0)),
        )


@dataclass(frozen=True)
class ShortlistEntry:
    """A candidate (or `none`) on the validation split, where selection chose."""

    version: str
    name: str
    origin: str
    figures: Figures

    def to_dict(self) -> JSONObject:
        return {"version": self.version, "name": self.name, "origin": self.origin, **self.figures.to_dict()}

    @classmethod
    def from_dict(cls, data: JSONRecord) -> ShortlistEntry:
        return cls(text(data["version"]), text(data["name"]), text(data["origin"]), Figures.from_dict(data))


@dataclass(frozen=True)
class Confirmation:
    """Tier 1 on validation tasks: full context and each confirmed candidate, and what the job concluded.

    `verdict`: "confirmed" (a candidate kept full context's success; the best of those was chosen), "rejected"
    (none did; the job chose full context) or "unconfirmed" (the tier-1 budget ran out first; full context too)."""

    verdict: str
    none: Figures
    candidates: tuple[ConfirmedCandidate, ...]

    def to_dict(self) -> JSONObject:
        return {
            "verdict": self.verdict,
            "none": self.none.to_dict(),
            "candidates": [c.to_dict() for c in self.candidates],
        }

    @classmethod
    def from_dict(cls, data: JSONRecord) -> Confirmation:
        return cls(
            text(data["verdict"]),
            Figures.from_dict(record(data["none"])),
            tuple(list_of_records(data["candidates"], ConfirmedCandidate.from_dict)),
        )


@dataclass(frozen=True)
class ConfirmedCandidate:
    entry: ShortlistEntry  # its figures are tier 1's
    rejected: str | None  # why tier 1 rejected it

    def to_dict(self) -> JSONObject:
        return {**self.entry.to_dict(), "rejected": self.rejected}

    @classmethod
    def from_dict(cls, data: JSONRecord) -> ConfirmedCandidate:
        return cls(ShortlistEntry.from_dict(data), optional_text(data["rejected"]))


@dataclass(frozen=True)
class Deterministic:
    """The candidate selection would have chosen among those with no LLM-written step, on the test split."""

    version: str
    name: str
    same_as_chosen: bool
    figures: Figures

    def to_dict(self) -> JSONObject:
        head: JSONObject = {"version": self.version, "name": self.name, "same_as_chosen": self.same_as_chosen}
        return {**head, **self.figures.to_dict()}

    @classmethod
    def from_dict(cls, data: JSONRecord) -> Deterministic:
        name, same = text(data["name"]), flag(data["same_as_chosen"])
        return cls(text(data["version"]), name, same, Figures.from_dict(data))


@dataclass
class RoundSummary:
    """One search round as the search's state records it (`state.json`) and the report shows it."""

    round: int
    pairs: int
    parents: list[str]
    screened: list[str]  # versions screened this round
    rejected: list[dict[str, str]]
    best: str
    improved: bool
    provoked: str | None = None  # a candidate with lowered triggers screened to find failures
    front: list[JSONObject] = field(default_factory=list)  # the front after the round (`Point.to_dict`)

    @classmethod
    def from_dict(cls, data: JSONRecord) -> RoundSummary:
        return cls(
            round=integer(data["round"]),
            pairs=integer(data["pairs"]),
            parents=list_of(data["parents"], text),
            screened=list_of(data["screened"], text),
            rejected=list_of(data["rejected"], lambda r: dict_of(r, text)),
            best=text(data["best"]),
            improved=flag(data["improved"]),
            provoked=optional_text(data.get("provoked")),
            front=list_of(data.get("front", []), obj),
        )


@dataclass(frozen=True)
class ReportRound:
    """One search round as the state recorded it, with how many screened candidates each proposer wrote."""

    summary: RoundSummary
    origins: Mapping[str, int]

    def to_dict(self) -> JSONObject:
        return {**self.summary.__dict__, "origins": dict(self.origins)}

    @classmethod
    def from_dict(cls, data: JSONRecord) -> ReportRound:
        return cls(RoundSummary.from_dict(data), dict_of(data.get("origins") or {}, integer))


@dataclass(frozen=True)
class Part:
    """One change on the way from the chosen guideline's root to it, and who made it (`search.lineage.parts`)."""

    change: str
    origin: str
    llm: bool
    round: int
    version: str

    def to_dict(self) -> JSONObject:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: JSONRecord) -> Part:
        change, origin, llm = text(data["change"]), text(data["origin"]), flag(data["llm"])
        return cls(change, origin, llm, integer(data["round"]), text(data["version"]))


@dataclass(frozen=True)
class Report:
    """What `acon optimize` found on the test split, how it got there, and what it cost."""

    experiment: str
    suite: str
    tasks: Mapping[str, int]  # train / val / test sizes
    chosen: ChosenGuideline
    rows: tuple[ReportRow, ...]
    best_baseline: str | None
    paired: Mapping[str, Paired]  # chosen vs none / seed / best_baseline at tier 0
    parts: tuple[Part, ...]
    deterministic: Deterministic | None
    shortlist: tuple[ShortlistEntry, ...]
    rounds: tuple[ReportRound, ...]
    stopped: str
    pareto: tuple[Point, ...]  # the train front
    points: tuple[Point, ...]  # every screened point
    budget: Budget | None
    infrastructure: Infrastructure | None
    tier0_limits: tuple[str, ...]
    wall_s: float | None
    mlflow: Mapping[str, str]  # tracking_uri, experiment_id, run_id
    best_baseline_tier1: str | None
    paired_tier1: Mapping[str, Paired]
    acceptance: Acceptance
    cut: Cut | None
    confirmation: Confirmation | None = None  # tier 1 on validation, when the job ran it

    @property
    def llm_parts(self) -> tuple[Part, ...]:
        return tuple(p for p in self.parts if p.llm)

    def row(self, strategy: str, tier: str = "reference") -> ReportRow | None:
        return next((r for r in self.rows if r.strategy == strategy and r.tier == tier), None)

    def to_dict(self) -> JSONObject:
        """The body of `report.json` (without its schema version, which `report.file` adds)."""
        return {
            "experiment": self.experiment,
            "suite": self.suite,
            "tasks": dict(self.tasks),
            "chosen": self.chosen.to_dict(),
            "rows": [r.to_dict() for r in self.rows],
            "best_baseline": self.best_baseline,
            "paired": {k: p.to_dict() for k, p in self.paired.items()},
            "llm_parts": [p.to_dict() for p in self.llm_parts],
            "parts": [p.to_dict() for p in self.parts],
            "deterministic": self.deterministic.to_dict() if self.deterministic else None,
            "shortlist": [s.to_dict() for s in self.shortlist],
            "rounds": [r.to_dict() for r in self.rounds],
            "stopped": self.stopped,
            "pareto": [p.to_dict() for p in self.pareto],
            "points": [p.to_dict() for p in self.points],
            "budget": self.budget.to_dict() if self.budget else {},
            "infrastructure": self.infrastructure.to_dict() if self.infrastructure else {},
            "tier0_limits": list(self.tier0_limits),
            "wall_s": self.wall_s,
            "mlflow": dict(self.mlflow),
            "best_baseline_tier1": self.best_baseline_tier1,
            "paired_tier1": {k: p.to_dict() for k, p in self.paired_tier1.items()},
            "acceptance": self.acceptance.to_dict(),
            "cut": self.cut.to_dict() if self.cut else {},
            "confirmation": self.confirmation.to_dict() if self.confirmation else None,
        }

    @classmethod
    def from_dict(cls, data: JSONRecord) -> Report:
        det, budget, infra = data["deterministic"], data["budget"], data["infrastructure"]
        confirmation = data.get("confirmation")  # absent from reports written before tier 1 confirmed in them
        return cls(
            experiment=text(data["experiment"]),
            suite=text(data["suite"]),
            tasks=dict_of(data["tasks"], integer),
            chosen=ChosenGuideline.from_dict(record(data["chosen"])),
            rows=tuple(list_of_records(data["rows"], ReportRow.from_dict)),
            best_baseline=optional_text(data["best_baseline"]),
            paired=dict_of_records(data["paired"], Paired.from_dict),
            parts=tuple(list_of_records(data["parts"], Part.from_dict)),
            deterministic=Deterministic.from_dict(record(det)) if det else None,
            shortlist=tuple(list_of_records(data["shortlist"], ShortlistEntry.from_dict)),
            rounds=tuple(list_of_records(data["rounds"], ReportRound.from_dict)),
            stopped=text(data["stopped"]),
            pareto=tuple(list_of_records(data["pareto"], Point.from_dict)),
            points=tuple(list_of_records(data["points"], Point.from_dict)),
            budget=Budget.from_dict(record(budget)) if budget else None,
            infrastructure=Infrastructure.from_dict(record(infra)) if infra else None,
            tier0_limits=tuple(list_of(data["tier0_limits"], text)),
            wall_s=optional_number(data["wall_s"]),
            mlflow=dict_of(data["mlflow"], text),
            best_baseline_tier1=optional_text(data["best_baseline_tier1"]),
            paired_tier1=dict_of_records(data["paired_tier1"], Paired.from_dict),
            acceptance=Acceptance.from_dict(record(data["acceptance"])),
            cut=Cut.from_dict(record(data["cut"])),
            confirmation=Confirmation.from_dict(record(confirmation)) if confirmation else None,
        )
