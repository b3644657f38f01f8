"""What a screen of one strategy on some tasks measured, per task and in aggregate.

Per-task figures are kept so that any two strategies compare on the same tasks (paired), and so that
a recall-free success (what an agent that never recalls would have solved) can be read off them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

from optimizer.agent.episode import Episode
from optimizer.evaluate.failure_causes import causes_of, count_causes
from optimizer.evaluate.records import EpisodeSummary
from optimizer.jsontypes import (
    JSON,
    JSONObject,
    JSONRecord,
    flag,
    integer,
    list_of,
    list_of_records,
    number,
    obj,
    optional_integer,
    optional_number,
    text,
)
from optimizer.stats import bootstrap_ci


@dataclass(frozen=True)
class TaskScore:
    task_id: str
    success: bool
    peak_tokens: int
    recalls: int = 0
    compressor_calls: int = 0
    # The episode's bill projected under the run's headline price model (None: not projected).
    cost: float | None = None
    # Needed facts checked at their step and how many the request showed (None: not measured, tier 1).
    facts_needed: int | None = None
    facts_visible: int | None = None
    # A failed episode's causes (`optimizer.evaluate.failure_causes`), read off its checker's reasons.
    causes: tuple[str, ...] = ()

    def to_dict(self) -> JSONObject:
        return asdict(self) | {"causes": list(self.causes)}

    @classmethod
    def from_dict(cls, data: JSONRecord) -> TaskScore:
        return cls(
            task_id=text(data["task_id"]),
            success=flag(data["success"]),
            peak_tokens=integer(data["peak_tokens"]),
            recalls=integer(data.get("recalls", 0)),
            compressor_calls=integer(data.get("compressor_calls", 0)),
            cost=optional_number(data.get("cost")),
            facts_needed=optional_integer(data.get("facts_needed")),
            facts_visible=optional_integer(data.get("facts_visible")),
            causes=tuple(list_of(data.get("causes", []), text)),
        )


@dataclass(frozen=True)
class Scores:
    """One strategy on one task list (infrastructure errors are never scored)."""

    tasks: tuple[TaskScore, ...]
    compressor_tokens: int = 0
    blocking: int = 0
    cost_per_success: float | None = None
    directory: str = ""
    # Extra summary figures of the run (dependency, total tokens, cache breaks, ...), as the run reported.
    summary: Mapping[str, JSON] = field(default_factory=dict)

    @classmethod
    def of(
        cls, episodes: Sequence[Episode] | Sequence[EpisodeSummary], summary: JSONRecord, directory: str = ""
    ) -> Scores:
        tasks = tuple(
            TaskScore(
                e.task_id,
                e.success,
                int(e.metrics.peak_tokens),
                int(e.metrics.recall_calls),
                int(e.metrics.compressor_calls),
                e.projected_cost if isinstance(e, EpisodeSummary) else None,
                e.metrics.facts_needed,
                e.metrics.facts_visible,
                () if e.success else causes_of(e.reasons),
            )
            for e in episodes
            if e.outcome != "infra_error"
        )
        return cls(
            tasks,
            int(number(summary.get("compressor_tokens", 0))),
            int(number(summary.get("blocking", 0))),
            optional_number(summary.get("cost_per_success")),
            directory,
            dict(summary),
        )

    @classmethod
    def pooled(cls, runs: Sequence[Scores]) -> Scores:
        """The episodes of several runs of the same strategy (one per sampling seed) as one set of scores: a task
        then has one episode per run, and the per-task figures (`success_by_task`, `peak_by_task`) average them."""
        if len(runs) == 1:
            return runs[0]
        return cls(
            tuple(t for run in runs for t in run.tasks),
            sum(run.compressor_tokens for run in runs),
            sum(run.blocking for run in runs),
            None,  # a cost per success over pooled runs is not what any one run projected
            "; ".join(run.directory for run in runs if run.directory),
        )

    @property
    def n(self) -> int:
        """Episodes scored: the task count, or tasks x seeds when runs were pooled."""
        return len(self.tasks)

    @property
    def distinct_tasks(self) -> int:
        return len({t.task_id for t in self.tasks})

    @property
    def success(self) -> float:
        return sum(t.success for t in self.tasks) / self.n if self.n else 0.0

    @property
    def success_ci(self) -> tuple[float, float]:
        return bootstrap_ci([float(t.success) for t in self.tasks])

    @property
    def peak_mean(self) -> float:
        return sum(t.peak_tokens for t in self.tasks) / self.n if self.n else 0.0

    @property
    def peak_ci(self) -> tuple[float, float]:
        return bootstrap_ci([float(t.peak_tokens) for t in self.tasks])

    @property
    def peak_max(self) -> int:
        return max((t.peak_tokens for t in self.tasks), default=0)

    @property
    def recalls(self) -> int:
        return sum(t.recalls for t in self.tasks)

    @property
    def success_without_recall(self) -> float:
        """Tasks solved without a single recall: a lower bound on what an agent that never recalls solves."""
        return sum(t.success and t.recalls == 0 for t in self.tasks) / self.n if self.n else 0.0

    @property
    def projected_cost_per_success(self) -> float | None:
        """Projected cost of these tasks over their successes (None: not projected, or nothing solved)."""
        successes = sum(t.success for t in self.tasks)
        if not successes or any(t.cost is None for t in self.tasks):
            return None
        return sum(t.cost or 0.0 for t in self.tasks) / successes

    @property
    def facts_visible(self) -> float | None:
        """Share of needed facts the request showed when their step came (tier 0's data-flow measure)."""
        measured = [t for t in self.tasks if t.facts_needed is not None]
        needed = sum(t.facts_needed or 0 for t in measured)
        return sum(t.facts_visible or 0 for t in measured) / needed if needed else None

    def all_visible(self) -> set[str]:
        """Tasks whose every needed fact was in the request when its step came."""
        return {t.task_id for t in self.tasks if t.facts_needed is not None and t.facts_visible == t.facts_needed}

    @property
    def compressor_calls(self) -> int:
        return sum(t.compressor_calls for t in self.tasks)

    def on(self, task_ids: Sequence[str]) -> Scores:
        """The same scores restricted to `task_ids` (for a like-for-like comparison)."""
        wanted = set(task_ids)
        return Scores(tuple(t for t in self.tasks if t.task_id in wanted), directory=self.directory)

    def by_task(self) -> dict[str, TaskScore]:
        return {t.task_id: t for t in self.tasks}

    def success_by_task(self) -> dict[str, float]:
        """Each task's success share over its episodes (several when the scores hold more than one sampling seed):
        what a paired comparison resamples, since two seeds of one task are not independent evidence."""
        wins: dict[str, list[float]] = {}
        for task in self.tasks:
            wins.setdefault(task.task_id, []).append(float(task.success))
        return {task_id: sum(w) / len(w) for task_id, w in wins.items()}

    def failure_causes(self) -> dict[str, int]:
        """Failed episodes showing each cause (`count_causes`): what the row's failures have in common."""
        return count_causes(t.causes for t in self.tasks if not t.success)

    def peak_by_task(self) -> dict[str, float]:
        """Each task's mean peak over its episodes (the peak counterpart of `success_by_task`)."""
        peaks: dict[str, list[int]] = {}
        for task in self.tasks:
            peaks.setdefault(task.task_id, []).append(task.peak_tokens)
        return {task_id: sum(p) / len(p) for task_id, p in peaks.items()}

    def headline(self) -> JSONObject:
        """The figures reports and trackers show."""
        return {
            "tasks": self.distinct_tasks,
            "episodes": self.n,
            "success": self.success,
            "success_ci": list(self.success_ci),
            "peak_tokens_mean": self.peak_mean,
            "peak_tokens_ci": list(self.peak_ci),
            "peak_tokens_max": self.peak_max,
            "recall_calls": self.recalls,
            "success_without_recall": self.success_without_recall,
            "compressor_tokens": self.compressor_tokens,
            "compressor_calls": self.compressor_calls,
            "blocking": self.blocking,
            "cost_per_success": self.cost_per_success,
            "facts_visible": self.facts_visible,
        }

    def to_dict(self) -> JSONObject:
        return {
            "tasks": [t.to_dict() for t in self.tasks],
            "compressor_tokens": self.compressor_tokens,
            "blocking": self.blocking,
            "cost_per_success": self.cost_per_success,
            "directory": self.directory,
            "summary": dict(self.summary),
        }

    @classmethod
    def from_dict(cls, data: JSONRecord) -> Scores:
        return cls(
            tuple(list_of_records(data["tasks"], TaskScore.from_dict)),
            integer(data.get("compressor_tokens", 0)),
            integer(data.get("blocking", 0)),
            optional_number(data.get("cost_per_success")),
            text(data.get("directory", "")),
            obj(data.get("summary", {})),
        )
