"""What an `acon optimize` job publishes: one frozen record per thing that happened, and what a subscriber is.

    RunEvaluated        an evaluation finished (or was read back): its run, agent, split, tasks, candidate
    CandidateScreened   a candidate was screened on the whole train split
    RoundMined          a round's pairs were mined: their provenance diffs
    SeedScreened        the seed's figures, the job's step 0
    RoundClosed         a round's figures and front
    CandidateChosen     the guideline the job chose, the seed it started from, the candidates it rejected
    ReportBuilt         the test-split report

Each record carries what a subscriber needs and nothing of the job, so tracking, the one subscriber today,
never reads the job back. `to_dict` / `read_event` are the records as a subscriber that fell behind keeps
them (`optimizer.tracking.outage`): everything but the live objects a later process cannot have (the tasks,
the episodes of a pair), which a replayed record goes without.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import ClassVar, Protocol

from optimizer.agent.episode import Episode
from optimizer.context.guideline import Guideline
from optimizer.evaluate.scores import Scores
from optimizer.evaluate.strategy_runs import RunResult
from optimizer.jsontypes import (
    JSON,
    JSONObject,
    JSONRecord,
    dict_of,
    flag,
    integer,
    list_of,
    list_of_records,
    number,
    obj,
    optional_text,
    record,
    text,
)
from optimizer.mining.pair_diff import PairDiff
from optimizer.report.front import Point
from optimizer.report.model import Report, RoundSummary
from optimizer.search.candidate import Candidate
from optimizer.search.state import SearchState
from optimizer.world.task import Task


def figures(scores: Scores) -> dict[str, float]:
    """The numbers among a screen's headline figures (what a subscriber may chart)."""
    return {k: v for k, v in scores.headline().items() if isinstance(v, int | float) and not isinstance(v, bool)}


@dataclass(frozen=True)
class CandidateRef:
    """Which candidate a record is about: its version, its guideline's name, who proposed it, in which round."""

    version: str
    name: str
    origin: str
    round: int

    @classmethod
    def of(cls, candidate: Candidate) -> CandidateRef:
        return cls(candidate.version, candidate.guideline.name, candidate.origin, candidate.round)

    def to_dict(self) -> JSONObject:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: JSONRecord) -> CandidateRef:
        return cls(text(data["version"]), text(data["name"]), text(data["origin"]), integer(data["round"]))


@dataclass(frozen=True)
class RunEvaluated:
    """An evaluation finished, or a cached one was read back (every evaluation of the job, each time)."""

    kind: ClassVar[str] = "run"
    result: RunResult
    agent: str
    split: str
    # The candidate whose guideline ran, when the run screens or confirms one.
    candidate: CandidateRef | None = None
    # The tasks evaluated (their reference solutions name what a failure lost); not kept when serialized.
    tasks: tuple[Task, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.result.directory.name}"

    def to_dict(self) -> JSONObject:
        return {
            "type": self.kind,
            "directory": str(self.result.directory),
            "strategy": self.result.strategy.model_dump(mode="json"),
            "task_ids": list(self.result.episodes.task_ids),
            "agent": self.agent,
            "split": self.split,
            "candidate": self.candidate.to_dict() if self.candidate else None,
        }

    @classmethod
    def from_dict(cls, data: JSONRecord, cost_model: str | None) -> RunEvaluated | None:
        """The evaluation read back from its run directory (summarized as the job does); None once it is gone."""
        from optimizer.context.strategies import parse_strategy
        from optimizer.evaluate.records import EpisodeRecords
        from optimizer.evaluate.store import EpisodeStore
        from optimizer.evaluate.strategy_runs import summarize

        directory = Path(text(data["directory"]))
        if not directory.is_dir():
            return None
        store = EpisodeStore(directory)
        offsets, summaries = store.index()
        order = [t for t in list_of(data["task_ids"], text) if t in offsets]
        records = EpisodeRecords(store.log, order, offsets, summaries)
        strategy = parse_strategy(obj(data["strategy"]))
        result = RunResult(strategy, directory, records, summarize(records, cost_model))
        candidate = data.get("candidate")
        return cls(
            result,
            text(data["agent"]),
            text(data["split"]),
            CandidateRef.from_dict(record(candidate)) if candidate else None,
        )


@dataclass(frozen=True)
class CandidateScreened:
    """A candidate screened on the whole train split (a subset screen alone publishes nothing)."""

    kind: ClassVar[str] = "candidate"
    candidate: CandidateRef
    guideline: Guideline
    parent: str | None  # the parent's version, as the candidate names it
    parent_guideline: Guideline | None  # the parent itself, when the job knows it
    rationale: str
    rejected: str | None
    screen: Mapping[str, float]  # its train screen's figures

    @classmethod
    def of(cls, candidate: Candidate, parent: Candidate | None) -> CandidateScreened:
        return cls(
            CandidateRef.of(candidate),
            candidate.guideline,
            candidate.parent,
            parent.guideline if parent is not None else None,
            candidate.rationale,
            candidate.rejected,
            figures(candidate.screens["train"]),
        )

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.candidate.version}"

    def to_dict(self) -> JSONObject:
        return {
            "type": self.kind,
            "candidate": self.candidate.to_dict(),
            "guideline": self.guideline.to_markdown(),
            "parent": self.parent,
            "parent_guideline": self.parent_guideline.to_markdown() if self.parent_guideline else None,
            "rationale": self.rationale,
            "rejected": self.rejected,
            "screen": dict(self.screen),
        }

    @classmethod
    def from_dict(cls, data: JSONRecord) -> CandidateScreened:
        parent = optional_text(data["parent_guideline"])
        return cls(
            CandidateRef.from_dict(record(data["candidate"])),
            Guideline.from_markdown(text(data["guideline"]), source="journal"),
            optional_text(data["parent"]),
            Guideline.from_markdown(parent, source="journal") if parent else None,
            text(data["rationale"]),
            optional_text(data["rejected"]),
            dict_of(data["screen"], number),
        )


@dataclass(frozen=True)
class RoundMined:
    """A round's pairs: where compression broke a task full context solved, each with its provenance diff."""

    kind: ClassVar[str] = "round_mined"
    round: int
    diffs: tuple[PairDiff, ...]
    # Each diff's (full, compressed) episodes, whose traces are tagged with it; not kept when serialized.
    episodes: tuple[tuple[Episode, Episode], ...] = ()

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.round}"

    def to_dict(self) -> JSONObject:
        return {"type": self.kind, "round": self.round, "diffs": [d.to_dict() for d in self.diffs]}

    @classmethod
    def from_dict(cls, data: JSONRecord) -> RoundMined:
        return cls(integer(data["round"]), tuple(PairDiff.from_dict(d) for d in list_of(data["diffs"], obj)))


@dataclass(frozen=True)
class SeedScreened:
    """The seed's screen: the job's step 0, on the split it was screened on (`train`, or `subset` alone)."""

    kind: ClassVar[str] = "seed"
    version: str
    split: str
    tasks: int
    screen: Mapping[str, float]

    @classmethod
    def of(cls, seed: Candidate) -> SeedScreened | None:
        """From the seed's screens: the train split's, else the subset's; None before it has either."""
        split = next((k for k in ("train", "subset") if k in seed.screens), None)
        if split is None:
            return None
        scores = seed.screens[split]
        return cls(seed.version, split, len(scores.tasks), figures(scores))

    @property
    def key(self) -> str:
        return self.kind

    def to_dict(self) -> JSONObject:
        return {**asdict(self), "type": self.kind}

    @classmethod
    def from_dict(cls, data: JSONRecord) -> SeedScreened:
        screen = dict_of(data["screen"], number)
        return cls(text(data["version"]), text(data["split"]), integer(data["tasks"]), screen)


@dataclass(frozen=True)
class RoundClosed:
    """A finished round: its figures (step = round) and the front as it stood."""

    kind: ClassVar[str] = "round_closed"
    round: int
    best: Mapping[str, float]  # the train screen of the round's best candidate
    pairs: int
    pairs_total: int  # pairs of this round and every earlier one
    candidates: int  # screened this round
    rejected: int
    improved: bool
    points: tuple[Point, ...]  # the baselines and every candidate up to this round
    front: tuple[Point, ...]

    @classmethod
    def of(cls, summary: RoundSummary, state: SearchState, points: Sequence[Point]) -> RoundClosed:
        """`summary` with the state it closed in; `points`: the job's points now (later rounds' are left out)."""
        index = summary.round
        best = state.candidates.get(summary.best)
        screen = best.screens.get("train") if best is not None else None
        return cls(
            round=index,
            best=figures(screen) if screen else {},
            pairs=summary.pairs,
            pairs_total=sum(r.pairs for r in state.rounds if r.round <= index),
            candidates=len(summary.screened),
            rejected=len(summary.rejected),
            improved=bool(summary.improved),
            points=tuple(p for p in points if p.kind == "baseline" or p.round <= index),
            front=tuple(Point.from_dict(p) for p in summary.front),
        )

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.round}"

    def to_dict(self) -> JSONObject:
        return {**asdict(self), "type": self.kind}

    @classmethod
    def from_dict(cls, data: JSONRecord) -> RoundClosed:
        return cls(
            round=integer(data["round"]),
            best=dict_of(data["best"], number),
            pairs=integer(data["pairs"]),
            pairs_total=integer(data["pairs_total"]),
            candidates=integer(data["candidates"]),
            rejected=integer(data["rejected"]),
            improved=flag(data["improved"]),
            points=tuple(list_of_records(data["points"], Point.from_dict)),
            front=tuple(list_of_records(data["front"], Point.from_dict)),
        )


@dataclass(frozen=True)
class Rejection:
    """A candidate screened on the train split and then rejected, and why."""

    guideline: Guideline
    reason: str


@dataclass(frozen=True)
class CandidateChosen:
    """The guideline the job chose, the seed it started from, and the screened candidates it rejected."""

    kind: ClassVar[str] = "chosen"
    chosen: CandidateRef
    guideline: Guideline
    seed: Guideline
    rejected: tuple[Rejection, ...]

    @property
    def key(self) -> str:
        return self.kind

    def to_dict(self) -> JSONObject:
        return {
            "type": self.kind,
            "chosen": self.chosen.to_dict(),
            "guideline": self.guideline.to_markdown(),
            "seed": self.seed.to_markdown(),
            "rejected": [{"guideline": r.guideline.to_markdown(), "reason": r.reason} for r in self.rejected],
        }

    @classmethod
    def from_dict(cls, data: JSONRecord) -> CandidateChosen:
        def guideline(value: JSON) -> Guideline:
            return Guideline.from_markdown(text(value), source="journal")

        def rejection(entry: JSONRecord) -> Rejection:
            return Rejection(guideline(entry["guideline"]), text(entry["reason"]))

        return cls(
            CandidateRef.from_dict(record(data["chosen"])),
            guideline(data["guideline"]),
            guideline(data["seed"]),
            tuple(list_of_records(data["rejected"], rejection)),
        )


@dataclass(frozen=True)
class ReportBuilt:
    """The test-split report, as written to `report.json`; `round`: the job's last, where its figures stand."""

    kind: ClassVar[str] = "report"
    report: Report
    round: int
    guideline: Guideline  # the chosen guideline itself

    @property
    def key(self) -> str:
        return self.kind

    def to_dict(self) -> JSONObject:
        return {
            "type": self.kind,
            "report": self.report.to_dict(),
            "round": self.round,
            "guideline": self.guideline.to_markdown(),
        }

    @classmethod
    def from_dict(cls, data: JSONRecord) -> ReportBuilt:
        guideline = Guideline.from_markdown(text(data["guideline"]), source="journal")
        return cls(Report.from_dict(record(data["report"])), integer(data["round"]), guideline)


JobEvent = RunEvaluated | CandidateScreened | RoundMined | SeedScreened | RoundClosed | CandidateChosen | ReportBuilt
# Each record but a run rebuilt from its own fields (a run is read back from its directory).
_READERS: Mapping[str, Callable[[JSONRecord], JobEvent]] = {
    CandidateScreened.kind: CandidateScreened.from_dict,
    RoundMined.kind: RoundMined.from_dict,
    SeedScreened.kind: SeedScreened.from_dict,
    RoundClosed.kind: RoundClosed.from_dict,
    CandidateChosen.kind: CandidateChosen.from_dict,
    ReportBuilt.kind: ReportBuilt.from_dict,
}


def read_event(data: JSONRecord, *, cost_model: str | None) -> JobEvent | None:
    """A record from its `to_dict`; None when what it names is gone (a run directory deleted since)."""
    kind = text(data["type"])
    if kind == RunEvaluated.kind:
        return RunEvaluated.from_dict(data, cost_model)
    return _READERS[kind](data)


class Subscriber(Protocol):
    """What a job publishes to: called with each record, in order; `where` names the record it keeps of the
    job (for tracking: the MLflow run), which the report cites, and is empty when it keeps none."""

    def __call__(self, event: JobEvent) -> None: ...

    @property
    def where(self) -> Mapping[str, str]: ...


def rejections(candidates: Sequence[Candidate], chosen: str) -> tuple[Rejection, ...]:
    """The candidates rejected after their train screen (those a `CandidateScreened` was published for)."""
    return tuple(
        Rejection(c.guideline, c.rejected)
        for c in candidates
        if c.rejected and "train" in c.screens and c.version != chosen
    )
