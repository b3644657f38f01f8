"""The outage journal: events a subscriber could not log are kept serialized and replayed into it, in order."""

from __future__ import annotations

import json
import socket

import pytest

from optimizer.context.guideline import read_guideline
from optimizer.mining.pair_diff import PairDiff
from optimizer.report.front import Point
from optimizer.search.events import (
    CandidateChosen,
    CandidateRef,
    CandidateScreened,
    JobEvent,
    Rejection,
    RoundClosed,
    RoundMined,
    SeedScreened,
    read_event,
)
from optimizer.tracking.outage import PENDING_FILE, Guarded
from optimizer.tracking.store import Store


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Recording:
    """A subscriber that records what it is handed, and fails (as a dead server would) from `fail_at` on."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.events: list[JobEvent] = []
        self.fail_at = fail_at
        self.calls = 0

    def __call__(self, event: JobEvent) -> None:
        self.calls += 1
        if self.fail_at is not None and self.calls >= self.fail_at:
            raise ConnectionError("server gone")
        self.events.append(event)

    @property
    def where(self) -> dict[str, str]:
        return {}


def sample_events() -> list[JobEvent]:
    seed = read_guideline("guidelines/seed/seed.md")
    child = seed.model_copy(update={"name": "child"})
    ref = CandidateRef(child.version, child.name, "tighten", 1)
    diff = PairDiff("t-1", f"guideline@{child.version}", 3, [], ["ok"], ["wrong id"], [], "full", "cut")
    point = Point("tighten:child", child.version, "candidate", 0.5, 900.0, 1)
    return [
        SeedScreened(seed.version, "train", 4, {"success": 1.0, "peak_tokens_mean": 1200.0}),
        CandidateScreened(ref, child, seed.version, seed, "tighter", None, {"success": 0.5}),
        RoundMined(1, (diff,)),
        RoundClosed(1, {"success": 0.5}, 1, 1, 2, 0, True, (point,), (point,)),
        CandidateChosen(ref, child, seed, (Rejection(seed, "tier-1 success 0.50 vs none 1.00"),)),
    ]


@pytest.mark.parametrize("event", sample_events(), ids=lambda e: e.kind)
def test_every_event_reads_back_equal_from_its_json(event):
    assert read_event(json.loads(json.dumps(event.to_dict())), cost_model=None) == event


def test_missed_events_are_journaled_and_replayed_into_the_subscriber_once(tmp_path):
    store = Store(f"http://127.0.0.1:{closed_port()}", None)
    events = sample_events()
    logs: list[str] = []
    first = Guarded(Recording(fail_at=2), store, tmp_path, logs.append, scope="optimize")
    for event in events:
        first(event)
    assert first.behind and len(logs) == 1 and "stopped answering" in logs[0]  # warned once
    assert first.missed == len(events) - 1
    journal = json.loads((tmp_path / PENDING_FILE).read_text())
    assert [e["event"]["type"] for e in journal["entries"]] == [e.kind for e in events[1:]]

    # The next run of the job: what it publishes itself clears its entry; the rest is replayed, in order,
    # except what the job publishes again on its own (its progress and its choice).
    second_inner = Recording()
    second = Guarded(second_inner, store, tmp_path, logs.append, scope="optimize")
    assert second.missed == len(events) - 1
    second(events[3])  # the resumed job's own RoundClosed
    assert second.catch_up(None) == 2
    assert second_inner.events == [events[3], events[1], events[2]]
    assert second.missed == 1  # the choice: the resumed job publishes it again at its report
    second(events[4])
    assert second.missed == 0 and not (tmp_path / PENDING_FILE).exists()


def test_another_jobs_entries_are_not_replayed(tmp_path):
    store = Store(f"http://127.0.0.1:{closed_port()}", None)
    event = sample_events()[1]
    Guarded(Recording(fail_at=1), store, tmp_path, lambda m: None, scope="run")(event)
    inner = Recording()
    assert Guarded(inner, store, tmp_path, lambda m: None, scope="optimize").catch_up(None) == 0
    assert inner.events == []


def test_a_subscriber_failing_while_the_server_answers_raises(tmp_path):
    guard = Guarded(Recording(fail_at=1), Store("sqlite:///x.db", None), tmp_path, lambda m: None, scope="optimize")
    with pytest.raises(ConnectionError):
        guard(sample_events()[0])
