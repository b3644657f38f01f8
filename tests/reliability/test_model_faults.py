"""An `acon optimize` job through a fault-injecting proxy (10 % of requests: 429, 500, timeout, truncated
JSON, malformed action) in front of the scripted models.

Every fault must be retried (the same request is sent again: by the client, or by re-running the
episode) or recorded (an infrastructure-error episode, a malformed agent reply the agent is asked to
redo, a failed optimizer call); the report's counts must match the records; and no infrastructure
error may become a pair or a score. Clients retry once (`max_retries = 1`), so some calls fail for good
and the infrastructure-error path is exercised too. Fault seeds are tried in a fixed order until, between
the runs, every fault kind, an infrastructure error of the agent and of the compressor, and a failed
optimizer call have occurred (at most MAX_RUNS runs; asserted below): which seed covers what depends on
the job's request order, which any change to the job's shape moves.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from optimizer.agent.episode import Episode
from optimizer.agent.episode_records import EpisodeMetrics
from optimizer.config import load_experiment
from optimizer.evaluate.codec import decode_episode, encode_episode
from optimizer.evaluate.strategy_runs import summarize
from optimizer.mining.pairs import compressed_successes, find_pairs
from optimizer.search.job import OptimizationJob
from optimizer.testing.scripted import scripted_models
from optimizer.testing.stub_server import FAULTS, FaultPlan, StubServer, expects_action
from tests.reliability.conftest import eager_guideline, episode_lines, write_job

SEEDS = (7, 12, 8, 16, *range(13, 40))
MAX_RUNS = 10
RETRYABLE = ("http_429", "http_500", "timeout", "truncated_json")
ATTEMPTS = 2  # max_retries = 1


def role(request: dict[str, Any]) -> str:
    messages = request.get("messages", [])
    text = json.dumps(messages)
    if len(messages) == 2 and messages[-1].get("content") in (".", "Reply with OK."):
        # The agent's system-prompt token probe runs inside an episode, so its failure is the episode's:
        # it counts as an agent call. The endpoint probe is retried until it answers.
        return "agent" if expects_action(request) else "probe"
    if expects_action(request):
        return "agent"
    return "compressor" if "compress the working context" in text else "optimizer"


class Run:
    """One faulty job: its config, report, and every request the proxy saw (body, role, fault)."""

    def __init__(self, tmp: Path, upstream: str, seed: int) -> None:
        self.proxy = StubServer(upstream=upstream, faults=FaultPlan(rate=0.1, seed=seed, timeout_s=0.2))
        with self.proxy as url:
            self.config = load_experiment(
                write_job(
                    tmp,
                    url,
                    guideline=eager_guideline(tmp),
                    endpoint={"max_retries": ATTEMPTS - 1},
                    train_limit=6,
                    budget={"rounds": 2, "max_agent_episodes": 12},
                    selection={"confirm_top": 1, "confirm_limit": 3},
                )
            )
            self.report = OptimizationJob(self.config, log=lambda m: None).run()
        self.sent = [
            (json.dumps(r, sort_keys=True), role(r), fault)
            for r, fault in zip(self.proxy.requests, self.proxy.faulted, strict=True)
        ]
        self.job = self.config.out_dir
        assert self.report.infrastructure is not None
        self.infra = self.report.infrastructure


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list[Run]:
    out = []
    with pytest.MonkeyPatch.context() as patch, StubServer(scripted_models) as upstream:
        for seed in SEEDS:
            tmp = tmp_path_factory.mktemp(f"faults{seed}")
            patch.setenv("ACON_HOME", str(tmp / "home"))
            out.append(Run(tmp, upstream, seed))
            if _covered(out) or len(out) == MAX_RUNS:
                break
    return out


def _covered(runs: list[Run]) -> bool:
    faults = {fault for run in runs for *_, fault in run.sent if fault}
    failed_roles = {kind for run in runs for _, kind, _ in _failed_for_good(run)}
    return (
        faults == set(FAULTS)
        and {"agent", "compressor"} <= failed_roles
        and sum(run.infra.failed_optimizer_calls for run in runs) > 0
    )


def _records(job: Path) -> list[dict[str, Any]]:
    return [r for records in episode_lines(job).values() for r in records]


def test_the_job_completes_at_ten_percent_faults(runs):
    for run in runs:
        faults = sum(1 for *_, fault in run.sent if fault)
        assert faults == sum(run.proxy.faults.injected.values()) > 0.04 * len(run.sent)
        assert run.report.chosen.version and run.report.rounds
        markdown = (run.job / "report.md").read_text()
        assert f"model calls retried: {run.infra.retried_calls} ({run.infra.retries} extra" in markdown
        assert f"episodes excluded as infrastructure errors: {run.infra.excluded_episodes}" in markdown


def test_the_seeds_cover_every_fault_kind_and_both_outcomes(runs):
    assert {fault for run in runs for *_, fault in run.sent if fault} == set(FAULTS)
    failed_roles = {kind for run in runs for _, kind, fault in _failed_for_good(run)}
    assert {"agent", "compressor"} <= failed_roles
    assert sum(run.infra.failed_optimizer_calls for run in runs) > 0


def _failed_for_good(run: Run) -> list[tuple[str, str, str | None]]:
    """Retryable faults the client did not retry: one request at a time, so a retry is the next request."""
    following = [body for body, _, _ in run.sent[1:]] + [None]
    return [
        (body, kind, fault)
        for (body, kind, fault), after in zip(run.sent, following, strict=True)
        if fault in RETRYABLE and after != body
    ]


def test_every_fault_is_retried_or_recorded(runs):
    for run in runs:
        unretried = Counter(kind for _, kind, _ in _failed_for_good(run))
        records = _records(run.job)
        # A call the client gave up on is an infrastructure-error episode (recorded); one that is still
        # the newest record of its task is excluded and counted, the others were run again.
        assert unretried["agent"] + unretried["compressor"] == sum(r["outcome"] == "infra_error" for r in records)
        assert run.infra.excluded_episodes + run.infra.redone_episodes == unretried["agent"] + unretried["compressor"]
        assert unretried["probe"] == 0  # probes are retried until they answer (or the job stops, one line)
        # An optimizer call that failed for good is a failed diagnosis or proposal, recorded as such.
        assert unretried["optimizer"] <= run.infra.failed_optimizer_calls
        malformed = sum(1 for _, kind, fault in run.sent if fault == "malformed_action" and kind == "agent")
        assert run.infra.malformed_agent_replies == malformed  # each a step the agent was asked to redo


def test_reported_retries_match_the_faults_on_episode_calls(runs):
    for run in runs:
        records = _records(run.job)
        faults = sum(1 for _, kind, fault in run.sent if fault in RETRYABLE and kind in ("agent", "compressor"))
        failed_for_good = sum(1 for r in records if r["outcome"] == "infra_error")
        assert faults == sum(r["metrics"]["retries"] for r in records) + ATTEMPTS * failed_for_good
        assert run.infra.retries == sum(r["metrics"]["retries"] for r in records)
        assert sum(run.infra.errors_by_kind.values()) == failed_for_good


def test_infrastructure_errors_are_never_pairs_or_scores(runs):
    for run in runs:
        _never_pairs_or_scores(run.job)


def _never_pairs_or_scores(job: Path) -> None:
    for run, records in episode_lines(job).items():
        latest = {r["task_id"]: r for r in records}
        assert all(r["outcome"] == "infra_error" for r in records if r is not latest[r["task_id"]]), run
        episodes = [decode_episode(r) for r in latest.values()]
        summary = summarize(episodes)
        assert summary["scored"] == sum(e.outcome != "infra_error" for e in episodes)
        assert summary["successes"] == sum(e.outcome == "success" for e in episodes)
    from optimizer.search.state import JobDir

    state = JobDir(job).load_state()
    for candidate in state.candidates.values():
        screen = candidate.screens.get("train")
        if screen is not None:
            assert screen.n + screen.summary["infra_errors"] == 4  # 6 train tasks, 2 held out to validate
    for diffs in job.glob("rounds/*/diffs.json"):
        for diff in json.loads(diffs.read_text()):
            outcome = _train_run(job, diff["strategy"].rsplit("@", 1)[1])[diff["task_id"]]
            # A pair is a real failure (or a success that needed a recall), never an outage.
            assert outcome == "failure" or (
                outcome == "success" and any(f["behaviour"] == "recall" for f in diff["missing"])
            ), diff["task_id"]


def _train_run(job: Path, version: str) -> dict[str, str]:
    for meta in job.glob("runs/guideline-reference-train-*/meta.json"):
        data = json.loads(meta.read_text())
        if data["strategy"].endswith(f"@{version}"):
            return {r["task_id"]: r["outcome"] for r in episode_lines(job)[meta.parent.name]}
    raise AssertionError(f"no train run of {version}")


def test_pair_mining_and_scores_ignore_infrastructure_errors():
    """The same rule on hand-made episodes: an outage on either side is neither a pair nor a success."""

    def episode(task: str, outcome: str) -> Episode:
        return Episode(
            task_id=task,
            suite="s",
            strategy="x",
            strategy_version="v",
            agent="reference",
            outcome=outcome,
            metrics=EpisodeMetrics(peak_tokens=1, steps=1),
        )

    full = [episode("a", "success"), episode("b", "success"), episode("c", "infra_error")]
    compressed = [episode("a", "infra_error"), episode("b", "failure"), episode("c", "failure")]
    assert [(f.task_id, c.task_id) for f, c in find_pairs(full, compressed)] == [("b", "b")]
    assert compressed_successes(full, [episode("a", "infra_error")]) == []
    summary = summarize(compressed)
    assert (summary["scored"], summary["infra_errors"], summary["success"]) == (2, 1, 0.0)


def test_an_infrastructure_error_is_run_again_and_superseded(tmp_path, monkeypatch):
    """Run directories resume: an outage's episodes run again on the next evaluation, the newest record of a
    task counts, and nothing is duplicated once every task has a real outcome."""
    from optimizer.context.guideline import read_guideline
    from optimizer.context.strategies import GuidelineStrategy
    from optimizer.errors import EndpointError
    from optimizer.evaluate.endpoints import ModelEndpoints
    from optimizer.evaluate.store import EpisodeStore
    from optimizer.evaluate.strategy_runs import run_strategy, select_tasks

    monkeypatch.setenv("ACON_HOME", str(tmp_path / "home"))
    with StubServer(scripted_models) as upstream:
        proxy = StubServer(upstream=upstream, faults=FaultPlan(rate=0.0, kinds=("http_500",)))
        with proxy as url:
            config = load_experiment(write_job(tmp_path, url, endpoint={"max_retries": 0}))
            tasks = select_tasks(config, "train", 3)
            strategy = GuidelineStrategy(guideline=read_guideline(eager_guideline(tmp_path)))
            with ModelEndpoints({"compressor": config.endpoints.compressor}) as endpoints:

                def evaluate():
                    return run_strategy(config, tasks, strategy, agent="reference", endpoints=endpoints, split="train")

                proxy.faults.rate = 1.0  # the endpoint goes down after the probe
                down = evaluate()
                proxy.faults.rate = 0.0
                back = evaluate()
                again = evaluate()
    assert [e.outcome for e in down.episodes] == ["infra_error"] * 3
    assert down.summary["scored"] == 0 and down.summary["infra_errors"] == 3
    # A benchmark that asks for scored episodes stops in one line on the outage instead of counting failures.
    with pytest.raises(EndpointError, match=f"infrastructure error on {tasks[0].id}"):
        down.scored_episodes()
    assert [e.task_id for e in back.scored_episodes()] == [t.id for t in tasks]
    assert all(e.outcome != "infra_error" for e in back.episodes)
    assert [encode_episode(e) for e in again.episodes] == [encode_episode(e) for e in back.episodes]
    store = EpisodeStore(back.directory)
    assert len(store.records()) == 6  # three outages, three real outcomes, nothing more
    assert [e.task_id for e in store.load()] == [t.id for t in tasks]


def test_the_proxy_relays_upstream_errors_and_answers_502_when_the_upstream_is_down():
    from optimizer.errors import EndpointError, InfrastructureError
    from optimizer.llm.client import ChatClient
    from optimizer.llm.endpoint import EndpointConfig

    def client(url: str, model: str) -> ChatClient:
        config = EndpointConfig(base_url=url, model=model, max_retries=1, backoff_s=0.0)
        return ChatClient(config, base_url=url, model=model)

    with StubServer(scripted_models, models=("right",)) as upstream, StubServer(upstream=upstream) as url:
        assert client(url, "right").complete([{"role": "user", "content": "hi"}]).text
        with pytest.raises(EndpointError, match="'wrong' or route not found"):
            client(url, "wrong").complete([{"role": "user", "content": "hi"}])
    with StubServer(upstream=upstream) as url, pytest.raises(InfrastructureError) as failed:  # upstream stopped
        client(url, "right").complete([{"role": "user", "content": "hi"}])
    assert failed.value.kind == "InternalServerError" and failed.value.attempts == 2
