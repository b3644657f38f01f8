"""A run's episodes as records on disk, with only their figures in memory.

A finished episode holds every text it saw (tens of kB); a suite of thousands of them does not fit beside
the job. So a run keeps, per task, an `EpisodeSummary` (outcome, metrics, reasons: what scoring and tables
read) and the byte offset of its record in `episodes.jsonl`; the whole `Episode` is parsed again only
when something reads it (mining a pair, a trace, a diff), and is dropped when that reader is done.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, overload

from optimizer.agent.episode import Episode, Outcome
from optimizer.storage import JsonlLog


@dataclass(frozen=True, slots=True)
class EpisodeSummary:
    """What a run remembers of one episode without its record: enough to score it and list it."""

    task_id: str
    outcome: Outcome
    metrics: Mapping[str, Any]
    reasons: tuple[str, ...] = ()
    error: str | None = None
    wall_s: float = 0.0

    @property
    def success(self) -> bool:
        return self.outcome == "success"

    @classmethod
    def of(cls, episode: Episode) -> EpisodeSummary:
        return cls._make(
            episode.task_id, episode.outcome, episode.metrics, episode.reasons, episode.error, episode.wall_s
        )

    @classmethod
    def of_record(cls, record: Mapping[str, Any]) -> EpisodeSummary:
        return cls._make(
            record["task_id"],
            record["outcome"],
            record.get("metrics") or {},
            record.get("reasons") or (),
            record.get("error"),
            record.get("wall_s", 0.0),
        )

    @classmethod
    def _make(
        cls,
        task_id: str,
        outcome: Outcome,
        metrics: Mapping[str, Any],
        reasons: Iterable[str],
        error: str | None,
        wall_s: float,
    ) -> EpisodeSummary:
        # Keys parsed from JSON are fresh strings per record; interned, ten thousand summaries share one set.
        return cls(
            task_id, outcome, {sys.intern(k): v for k, v in metrics.items()}, tuple(reasons), error, float(wall_s)
        )


class EpisodeRecords(Sequence[Episode]):
    """The newest record of each task of a run, in task order, read from `episodes.jsonl` on access.

    Indexing or iterating parses each record again (nothing is cached, so memory stays flat whatever the
    number of tasks); `summaries` and `summary(task_id)` answer without reading the file.
    """

    def __init__(
        self, log: JsonlLog, order: Sequence[str], offsets: Mapping[str, int], summaries: Mapping[str, EpisodeSummary]
    ) -> None:
        self._log = log
        self._order = tuple(order)
        self._offsets = dict(offsets)
        self._summaries = dict(summaries)

    @property
    def summaries(self) -> list[EpisodeSummary]:
        return [self._summaries[task_id] for task_id in self._order]

    @property
    def task_ids(self) -> tuple[str, ...]:
        return self._order

    def summary(self, task_id: str) -> EpisodeSummary | None:
        return self._summaries.get(task_id)

    def get(self, task_id: str) -> Episode | None:
        offset = self._offsets.get(task_id)
        return None if offset is None else Episode.from_dict(self._log.read_at(offset))

    def with_metrics(self, extra: Mapping[str, Mapping[str, Any]]) -> EpisodeRecords:
        """The same records, each listed task's summary metrics extended by `extra[task_id]` (figures
        derived from the records after the run, e.g. projected bills)."""
        summaries = {
            task_id: replace(s, metrics={**s.metrics, **extra[task_id]}) if task_id in extra else s
            for task_id, s in self._summaries.items()
        }
        return EpisodeRecords(self._log, self._order, self._offsets, summaries)

    def __len__(self) -> int:
        return len(self._order)

    @overload
    def __getitem__(self, index: int) -> Episode: ...

    @overload
    def __getitem__(self, index: slice) -> list[Episode]: ...

    def __getitem__(self, index: int | slice) -> Episode | list[Episode]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        episode = self.get(self._order[index])
        assert episode is not None
        return episode

    def __iter__(self) -> Iterator[Episode]:
        for task_id in self._order:
            episode = self.get(task_id)
            assert episode is not None
            yield episode


def summaries_of(episodes: Sequence[Episode] | EpisodeRecords) -> list[EpisodeSummary] | Sequence[Episode]:
    """Whatever of `episodes` is cheapest to read for outcome and metrics: summaries of a run, or the list."""
    return episodes.summaries if isinstance(episodes, EpisodeRecords) else episodes
