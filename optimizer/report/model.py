"""The final report as a typed tree: what `build_report` returns and every renderer reads.

Each node carries its own codec (`to_dict` / `from_dict`). `to_dict` writes the keys `report.json` has always
had, in the same order, so readers of older files and the documented shape stay valid; optional figures a
row does not have are left out rather than written as null, as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from optimizer.evaluate.scores import Scores
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

    @classmethod
    def of(cls, scores: Scores) -> Figures:
        return cls.from_dict(scores.headline())

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["success_ci"], out["peak_tokens_ci"] = list(self.success_ci), list(self.peak_tokens_ci)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Figures:
        values = {f.name: data[f.name] for f in fields(cls)}
        values["success_ci"], values["peak_tokens_ci"] = (
            interval(data["success_ci"]),
            interval(data["peak_tokens_ci"]),
        )
        return cls(**values)


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

    def to_dict(self) -> dict[str, Any]:
        return {"tasks": self.tasks, "chosen_peak_mean": self.chosen_peak_mean, "peak_mean": self.peak_mean}


@dataclass(frozen=True)
class Behaviour:
    """Of the tasks where tier 0 saw every needed fact, the share the tier-1 agent solved."""

    tasks: int
    success: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"tasks": self.tasks, "success": self.success}


@dataclass(frozen=True)
class ReportRow:
    """One strategy on the test tasks at one tier."""

    strategy: str
    kind: str  # learned | seed | control | baseline | oracle | deterministic
    tier: str  # reference | llm
    version: str | None
    figures: Figures
    summary: Mapping[str, Any]  # SUMMARY_KEYS, as the evaluation's run summary had them
    peak_vs_none: float | None = None
    both_solved: BothSolved | None = None
    behaviour: Behaviour | None = None  # tier-1 rows with a tier-0 row of the same strategy

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
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
    def from_dict(cls, data: Mapping[str, Any]) -> ReportRow:
        both, acted = data.get("both_solved"), data.get("behaviour")
        return cls(
            strategy=data["strategy"],
            kind=data["kind"],
            tier=data["tier"],
            version=data["version"],
            figures=Figures.from_dict(data),
            summary={k: data["summary"].get(k) for k in SUMMARY_KEYS},
            peak_vs_none=data.get("peak_vs_none"),
            both_solved=BothSolved(**both) if both is not None else None,
            behaviour=Behaviour(**acted) if acted is not None else None,
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

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"version": self.version, "name": self.name, "origin": self.origin}
        out.update({k: v for k, v in (("round", self.round), ("path", self.path)) if v is not None})
        return {**out, **(self.row.to_dict() if self.row else {})}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChosenGuideline:
        return cls(
            version=data["version"],
            name=data["name"],
            origin=data["origin"],
            round=data.get("round"),
            path=data.get("path"),
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

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.best_baseline is None:
            for key in ("best_baseline", "best_peak", "best_success", "vs_best"):
                del out[key]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Cut | None:
        # An empty cut: the report had no tier-0 row for the chosen guideline or `none`.
        values: dict[str, Any] = {f.name: data.get(f.name) for f in fields(cls)}
        return cls(**values) if data else None


@dataclass(frozen=True)
class Budget:
    """What the job spent of its limits."""

    candidates: int
    agent_episodes: int
    compressor_calls: int
    optimizer_tokens: int

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


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

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["errors_by_kind"] = dict(self.errors_by_kind)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Infrastructure:
        # Reports written before refused proposals were counted lack the key.
        return cls(**{"refused_proposals": 0, **{f.name: data[f.name] for f in fields(cls) if f.name in data}})


@dataclass(frozen=True)
class ShortlistEntry:
    """A candidate (or `none`) on the validation split, where selection chose."""

    version: str
    name: str
    origin: str
    figures: Figures

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "name": self.name, "origin": self.origin, **self.figures.to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ShortlistEntry:
        return cls(data["version"], data["name"], data["origin"], Figures.from_dict(data))


@dataclass(frozen=True)
class Confirmation:
    """Tier 1 on validation tasks: full context and each confirmed candidate, and what the job concluded.

    `verdict`: "confirmed" (a candidate kept full context's success; the best of those was chosen), "rejected"
    (none did; the job chose full context) or "unconfirmed" (the tier-1 budget ran out first; full context too)."""

    verdict: str
    none: Figures
    candidates: tuple[ConfirmedCandidate, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "none": self.none.to_dict(),
            "candidates": [c.to_dict() for c in self.candidates],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Confirmation:
        return cls(
            data["verdict"],
            Figures.from_dict(data["none"]),
            tuple(ConfirmedCandidate.from_dict(c) for c in data["candidates"]),
        )


@dataclass(frozen=True)
class ConfirmedCandidate:
    entry: ShortlistEntry  # its figures are tier 1's
    rejected: str | None  # why tier 1 rejected it

    def to_dict(self) -> dict[str, Any]:
        return {**self.entry.to_dict(), "rejected": self.rejected}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ConfirmedCandidate:
        return cls(ShortlistEntry.from_dict(data), data["rejected"])


@dataclass(frozen=True)
class Deterministic:
    """The candidate selection would have chosen among those with no LLM-written step, on the test split."""

    version: str
    name: str
    same_as_chosen: bool
    figures: Figures

    def to_dict(self) -> dict[str, Any]:
        head = {"version": self.version, "name": self.name, "same_as_chosen": self.same_as_chosen}
        return {**head, **self.figures.to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Deterministic:
        return cls(data["version"], data["name"], data["same_as_chosen"], Figures.from_dict(data))


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
    front: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class ReportRound:
    """One search round as the state recorded it, with how many screened candidates each proposer wrote."""

    summary: RoundSummary
    origins: Mapping[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {**self.summary.__dict__, "origins": dict(self.origins)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReportRound:
        summary = RoundSummary(**{k: v for k, v in data.items() if k != "origins"})
        return cls(summary, dict(data.get("origins") or {}))


@dataclass(frozen=True)
class Part:
    """One change on the way from the chosen guideline's root to it, and who made it (`search.lineage.parts`)."""

    change: str
    origin: str
    llm: bool
    round: int
    version: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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

    def to_dict(self) -> dict[str, Any]:
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
    def from_dict(cls, data: Mapping[str, Any]) -> Report:
        det, budget, infra = data["deterministic"], data["budget"], data["infrastructure"]
        return cls(
            experiment=data["experiment"],
            suite=data["suite"],
            tasks=dict(data["tasks"]),
            chosen=ChosenGuideline.from_dict(data["chosen"]),
            rows=tuple(ReportRow.from_dict(r) for r in data["rows"]),
            best_baseline=data["best_baseline"],
            paired={k: Paired.from_dict(p) for k, p in data["paired"].items()},
            parts=tuple(Part(**p) for p in data["parts"]),
            deterministic=Deterministic.from_dict(det) if det else None,
            shortlist=tuple(ShortlistEntry.from_dict(s) for s in data["shortlist"]),
            rounds=tuple(ReportRound.from_dict(r) for r in data["rounds"]),
            stopped=data["stopped"],
            pareto=tuple(Point(**p) for p in data["pareto"]),
            points=tuple(Point(**p) for p in data["points"]),
            budget=Budget(**budget) if budget else None,
            infrastructure=Infrastructure.from_dict(infra) if infra else None,
            tier0_limits=tuple(data["tier0_limits"]),
            wall_s=data["wall_s"],
            mlflow=dict(data["mlflow"]),
            best_baseline_tier1=data["best_baseline_tier1"],
            paired_tier1={k: Paired.from_dict(p) for k, p in data["paired_tier1"].items()},
            acceptance=Acceptance.from_dict(data["acceptance"]),
            cut=Cut.from_dict(data["cut"]),
            # Absent from reports written before tier 1 confirmed in the report.
            confirmation=Confirmation.from_dict(data["confirmation"]) if data.get("confirmation") else None,
        )
