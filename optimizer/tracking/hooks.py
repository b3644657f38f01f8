"""What acon's jobs log: the subscriber to `OptimizationJob`'s events, and `record_run` for `acon run` / `compare`.

Run layout of an `acon optimize` job (every child found again by its key, so a resumed job adds to it):

    optimize                      params: config; metrics per round (step = round, 0 the seed); report, final
    │                             Pareto; description: the report's headline and every pair, linked
    ├── eval/<run dir>            baselines on the train split (episode table, a trace per episode)
    ├── round/00 … round/NN       pair diffs (HTML + Markdown), pair table, Pareto plot of the round
    │   └── candidate/<version>   guideline .md, diff vs its parent, screen scores; registered prompt
    │       └── eval/<run dir>    its screening and tier-1 confirmation runs
    └── final                     the test-split evaluations of the report
        └── eval/<run dir>

An evaluation run lasts as long as its episodes did, and holds the diff of each of its failures that full
context solved on the same split (`pairs/<task>.html`); both traces of such a pair are tagged with it.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, cast

from optimizer.agent.episode import Episode
from optimizer.agent.kinds import AGENTS
from optimizer.config import ExperimentConfig
from optimizer.evaluate.strategy_runs import RunResult, episode_row
from optimizer.jsontypes import JSONObject, JSONRecord
from optimizer.report.file import report_json
from optimizer.report.front import Point
from optimizer.report.markdown import report_markdown
from optimizer.search.events import (
    CandidateChosen,
    CandidateRef,
    CandidateScreened,
    JobEvent,
    ReportBuilt,
    RoundClosed,
    RoundMined,
    RunEvaluated,
    SeedScreened,
)
from optimizer.tracking.base import Tracker
from optimizer.tracking.front_page import VIEW_KEY, description, review_view
from optimizer.tracking.opening import tracker_from_config
from optimizer.tracking.outage import Guarded, job_run
from optimizer.tracking.params import experiment_params, experiment_tags, flatten, tier_of
from optimizer.tracking.pareto import ParetoPoint

if TYPE_CHECKING:
    from optimizer.mining.pair_diff import PairDiff
    from optimizer.tracking.mlflow_tracker import MlflowTracker
    from optimizer.world.task import Task

RUN_METRICS = (
    "success",
    "peak_tokens_mean",
    "peak_tokens_max",
    "dependency_mean",
    "steps_mean",
    "agent_tokens",
    "compressor_tokens",
    "compressor_calls",
    "total_tokens",
    "cost",
    "cost_per_success",
    "scored",
    "infra_errors",
    "blocking",
    "recall_calls",
    "duplicate_writes",
    "cache_breaks",
    "cache_breaks_per_episode",
    "wall_s",
)
# The reference agent (tier 0) calls no model: these would read 0 for "not measured", not for "none spent".
AGENT_ONLY = ("agent_tokens",)
SCORE_METRICS = (
    "success",
    "peak_tokens_mean",
    "peak_tokens_max",
    "dependency_mean",
    "total_tokens",
    "compressor_tokens",
    "cost_per_success",
    "blocking",
    "facts_visible",
)


def numeric(data: JSONRecord, keys: Sequence[str], prefix: str = "") -> dict[str, float]:
    """The numeric values among `keys` (bools as 0/1), rounded as the runs list should show them; None and
    non-numbers are left out."""
    values = {k: data.get(k) for k in keys}
    return {f"{prefix}{k}": rounded(k, float(v)) for k, v in values.items() if isinstance(v, int | float)}


def rounded(key: str, value: float) -> float:
    """Token counts to whole tokens (a mean peak of 1715.33333 reads as 1715), rates and costs to 4 places."""
    if "tokens" in key or key.startswith("dependency"):
        return float(round(value))
    return round(value, 4)


class JobTracking:
    """Records evaluation runs into a tracker: one child run per run directory, episodes traced.

    The subscriber of `acon run` / `acon compare`, which publish `RunEvaluated` alone."""

    def __init__(self, tracker: Tracker, config: ExperimentConfig) -> None:
        self.tracker = tracker
        self.config = config
        self._recorded: set[str] = set()

    def __call__(self, event: JobEvent) -> None:
        if isinstance(event, RunEvaluated):
            self.record_run(event.result, agent=event.agent, split=event.split)

    @property
    def where(self) -> dict[str, str]:
        """Where the job run lives (`tracking_uri`, `experiment_id`, `run_id`), for the report to name it."""
        return self.tracker.run_ref()

    def traces_episodes(self, agent: str, split: str) -> bool:
        """Whether a run's episodes are traced when it is recorded: every run a user asked for is."""
        return True

    def record_run(self, result: RunResult, *, agent: str, split: str) -> None:
        """A child run of the active run: strategy params, summary metrics, episode table, traces."""
        key = f"eval/{result.directory.name}"
        if key in self._recorded:  # the same cached evaluation again, within this process
            return
        strategy = result.strategy
        tags = {
            **experiment_tags(self.config, strategy=strategy.label(), split=split, agent=agent),
            "acon.run_dir": str(result.directory),
        }
        if strategy.type == "guideline":
            tags["acon.guideline"] = strategy.version()
        params: JSONObject = {"strategy": strategy.model_dump(mode="json"), "tasks": len(result.episodes)}
        if strategy.type == "guideline":
            params["strategy"] = {"type": "guideline", "version": strategy.version()}
        name = f"{strategy.label()} · {agent} · {split}"
        measured = RUN_METRICS if AGENTS.get(agent).uses_model else tuple(m for m in RUN_METRICS if m not in AGENT_ONLY)
        with self.tracker.child_run(key, name, params=flatten(params), tags=tags, times_ms=_times(result)):
            self.tracker.log_metrics(numeric(result.summary, measured))
            self.tracker.log_table([episode_row(e) for e in result.episodes], "tables/episodes.json")
            if self.traces_episodes(agent, split):
                trace_tags = {"acon.split": split, "acon.tier": tier_of(agent)}
                for episode in result.episodes:
                    self.tracker.trace_episode(episode, trace_tags)
        self._recorded.add(key)


class OptimizeTracking(JobTracking):
    """The subscriber of `acon optimize`: each of the job's events, logged where the layout above puts it."""

    def __init__(self, tracker: Tracker, config: ExperimentConfig) -> None:
        super().__init__(tracker, config)
        # Full-context episodes by (split, agent): `none` runs first on every split, so each later failure
        # is paired with its full-context run as soon as it is recorded, mined or not.
        self._full: dict[tuple[str, str], dict[str, Episode]] = {}
        # Every task an evaluation of this process named: a replayed evaluation (`outage`) carries none.
        self._tasks: dict[str, Task] = {}

    def __call__(self, event: JobEvent) -> None:
        match event:
            case RunEvaluated():
                self.on_run(event)
            case CandidateScreened():
                self.on_candidate(event)
            case RoundMined():
                self.log_diffs(event.round, event.diffs, event.episodes)
            case SeedScreened():
                self.on_seed(event)
            case RoundClosed():
                self.on_round(event)
            case CandidateChosen():
                self.on_chosen(event)
            case ReportBuilt():
                self.on_report(event)

    def traces_episodes(self, agent: str, split: str) -> bool:
        """A job's tier-0 screens on train and validation are traced only under `traces = "all"`: they are most of
        its episodes, and exporting their traces to a sqlite store took most of a long job's time outside runs.
        The real agent's runs and the test rows are always traced, a screen's episodes when a pair marks them."""
        return self.tracker.trace_screens or tier_of(agent) != "0" or split == "test"

    def on_run(self, event: RunEvaluated) -> None:
        result, split = event.result, event.split
        self._tasks.update({t.id: t for t in event.tasks})
        with contextlib.ExitStack() as stack:
            for key, name in _parents(event):
                stack.enter_context(self.tracker.child_run(key, name))
            fresh = f"eval/{result.directory.name}" not in self._recorded
            self.record_run(result, agent=event.agent, split=split)
            if fresh:
                self._pair_failures(result, agent=event.agent, split=split)

    def _pair_failures(self, result: RunResult, *, agent: str, split: str) -> None:
        """Every failure whose full-context run succeeded: its diff in this run, both traces tagged."""
        from optimizer.mining.diff_render import diff_html, diff_markdown
        from optimizer.mining.pair_diff import diff_pair
        from optimizer.mining.pairs import find_pairs

        if result.strategy.type == "none":
            self._full.setdefault((split, agent), {}).update({e.task_id: e for e in result.episodes})
            return
        full = self._full.get((split, agent))
        if not full:
            return
        # An untraced screen's failures keep their diffs; their traces wait for a round to mine them.
        traced = self.traces_episodes(agent, split)
        for baseline, episode in find_pairs(list(full.values()), result.episodes):
            diff = diff_pair(baseline, episode, self._tasks.get(episode.task_id))
            path = self.tracker.log_pair_diff(episode.task_id, diff_html(diff), diff_markdown(diff))
            if traced:
                self.tracker.mark_pair(diff, baseline, episode, path)

    def on_candidate(self, event: CandidateScreened) -> None:
        candidate, guideline = event.candidate, event.guideline
        with (
            self._round(candidate.round),
            self.tracker.child_run(
                f"candidate/{candidate.version}",
                _candidate_name(candidate),
                params={
                    "origin": candidate.origin,
                    "round": candidate.round,
                    "parent": event.parent,
                    "guideline": candidate.version,
                },
                tags={"acon.guideline": candidate.version, "origin": candidate.origin, "round": str(candidate.round)},
            ),
        ):
            screen = numeric(event.screen, SCORE_METRICS, "screen_")
            self.tracker.log_metrics(screen, step=candidate.round)
            self.tracker.log_guideline(guideline, candidate.round)
            if event.parent_guideline is not None:
                old = event.parent_guideline
                self.tracker.log_guideline_diff(old, guideline, name=f"vs-parent-{old.version}")
            if event.rationale:
                self.tracker.log_text(event.rationale, "rationale.md")
            self.tracker.register_guideline(
                guideline, tags=_version_tags(event, screen), message=_commit_message(event)
            )

    def log_diffs(
        self, index: int, diffs: Sequence[PairDiff], episodes: Sequence[tuple[Episode, Episode]] = ()
    ) -> None:
        """A round's pair diffs (files, table, counts) in its round run; given their episodes, their traces tagged."""
        from optimizer.mining.diff_render import diff_html, diff_markdown

        with self._round(index):
            for i, diff in enumerate(diffs):  # several candidates may lose the same task: a file per (task, candidate)
                name = f"{diff.task_id}-{diff.strategy.rsplit('@', 1)[-1]}"
                path = self.tracker.log_pair_diff(name, diff_html(diff), diff_markdown(diff), round=index)
                if episodes:
                    self.tracker.mark_pair(diff, episodes[i][0], episodes[i][1], path, split="train")
            self.tracker.log_table([_pair_row(d) for d in diffs], "tables/pairs.json")
            missing = sum(len(d.missing) for d in diffs)
            self.tracker.log_metrics({"pairs": len(diffs), "missing_facts": missing}, step=index)
        self.tracker.log_metrics({"pairs": len(diffs)}, step=index)

    def on_seed(self, event: SeedScreened) -> None:
        """Step 0 of the job run's metrics, named by the split they were measured on: the parent run also holds
        the test split's figures. A seed that lost to a model-free baseline on the LLM subset has that alone."""
        self.tracker.log_metrics(numeric(event.screen, SCORE_METRICS, f"{event.split}_"), step=0)
        self.tracker.set_tags({"acon.step0": f"seed {event.version}, screened on {event.split} ({event.tasks} tasks)"})

    def on_round(self, event: RoundClosed) -> None:
        """A round's metrics (step = round) and the Pareto plot of its front."""
        index = event.round
        self.tracker.log_metrics(
            {
                **numeric(event.best, SCORE_METRICS, "train_"),
                "pairs": event.pairs,
                "candidates": event.candidates,
                "rejected": event.rejected,
                # The latest value is what the runs list shows: per round alone it read 0 after a clean round.
                "pairs_total": event.pairs_total,
                "pareto_size": len(event.front),
                "improved": event.improved,
            },
            step=index,
        )
        with self._round(index):
            self.tracker.log_pareto(_points(event.points), _front(event.front), round=index)

    def on_chosen(self, event: CandidateChosen) -> None:
        self.tracker.set_tags({"acon.chosen": event.chosen.version})
        self.tracker.log_guideline(event.guideline)
        self.tracker.log_guideline_diff(event.seed, event.guideline, name="seed-to-chosen")
        for rejected in event.rejected:
            # Only a candidate screened on the whole train split was registered (`on_candidate`): one rejected
            # after its subset screen (the compressor budget ran out) has no prompt version to tag.
            self.tracker.tag_guideline(
                rejected.guideline, {"acon.status": "rejected", "acon.rejected": rejected.reason}
            )

    def on_report(self, event: ReportBuilt) -> None:
        report = event.report
        test = report.chosen.row.figures.to_dict() if report.chosen.row else {}
        self.tracker.log_metrics(
            {
                **numeric(test, SCORE_METRICS, "test_"),
                **numeric(
                    report.budget.to_dict() if report.budget else {},
                    ("agent_episodes", "compressor_calls", "optimizer_tokens"),
                ),
                "pareto_size": len(report.pareto),
            },
            step=event.round,
        )
        self.tracker.set_tags({"acon.stopped": report.stopped})
        for tier, verdict in report.acceptance.tiers.items():
            self.tracker.set_tags({f"acon.acceptance.{tier}": "pass" if verdict.passed else "fail"})
        self.tracker.log_pareto(_points(report.points), _front(report.pareto))
        self.tracker.log_pareto(
            [
                ParetoPoint(
                    f"{row.strategy} ({row.tier})",
                    row.figures.success,
                    row.figures.peak_tokens_mean,
                    baseline=row.kind != "learned",
                )
                for row in report.rows
            ],
            name="test",
            title="test split: chosen guideline vs baselines",
        )
        self.tracker.log_report(report_markdown(report), report_json(report))
        chosen, cut = report.chosen, report.cut
        self.tracker.set_best(
            event.guideline,
            prompt_tags={
                "acon.status": "chosen",
                "acon.chosen": chosen.version,
                "acon.chosen_candidate": f"{chosen.origin}: {chosen.name}@{chosen.version}",
                "acon.experiment": self.config.name,
                **({"acon.test_peak_vs_none": f"{cut.vs_none:+.1%}"} if cut and cut.vs_none is not None else {}),
                **({"acon.test_success": f"{cut.success:.2f}"} if cut else {}),
            },
        )
        ref = self.tracker.run_ref()
        if ref:
            self.tracker.share_view(VIEW_KEY, review_view(ref["run_id"]))
            self.tracker.set_description(
                description(report, self.tracker.pair_links(), experiment_id=ref["experiment_id"], run_id=ref["run_id"])
            )

    def _round(self, index: int) -> contextlib.AbstractContextManager[str | None]:
        return self.tracker.child_run(f"round/{index:02d}", _round_name(index), tags={"round": str(index)})


def _parents(event: RunEvaluated) -> list[tuple[str, str]]:
    """Where an evaluation nests: final (test split), its candidate (a guideline), or the job."""
    if event.split == "test":
        return [("final", "final: test split")]
    candidate = event.candidate
    if candidate is None:
        return []
    return [
        (f"round/{candidate.round:02d}", _round_name(candidate.round)),
        (f"candidate/{candidate.version}", _candidate_name(candidate)),
    ]


def _version_tags(event: CandidateScreened, screen: Mapping[str, float]) -> dict[str, str]:
    """What a registered version says about the candidate it came from: name, origin, round, parent, scores."""
    candidate = event.candidate
    tags = {
        "acon.candidate": _candidate_name(candidate),
        "acon.origin": candidate.origin,
        "acon.round": str(candidate.round),
        "acon.status": "rejected" if event.rejected else "screened",
    }
    if event.parent:
        tags["acon.parent"] = event.parent
    if event.rejected:
        tags["acon.rejected"] = event.rejected
    tags.update({f"acon.{k}": f"{v:g}" for k, v in screen.items()})
    return tags


def _commit_message(event: CandidateScreened) -> str:
    """The version list and compare view show the commit message: the policy goes there, since the texts
    of most candidates are the same and only the policy changed."""
    policy = event.guideline.policy.model_dump_json(exclude_defaults=True)
    return f"{_candidate_name(event.candidate)} (round {event.candidate.round}); policy {policy}"


def _times(result: RunResult) -> tuple[int, int] | None:
    """(start, end) in epoch ms of an evaluation: its last episode's write, less the episodes' wall time."""
    episodes = result.directory / "episodes.jsonl"
    if not episodes.exists():
        return None
    end = episodes.stat().st_mtime
    return int((end - float(result.summary.get("wall_s") or 0.0)) * 1000), int(end * 1000)


def _round_name(index: int) -> str:
    return "seed" if index == 0 else f"round {index}"


def _candidate_name(candidate: CandidateRef) -> str:
    return f"{candidate.origin}: {candidate.name}@{candidate.version}"


def _label(point: Point) -> str:
    return point.label if point.kind == "baseline" else f"{point.label}@{point.version[:6]}"


def _points(points: Sequence[Point]) -> list[ParetoPoint]:
    return [ParetoPoint(_label(p), p.success, p.peak_tokens, baseline=p.kind == "baseline") for p in points]


def _front(front: Sequence[Point]) -> list[str]:
    return [_label(p) for p in front]


def _pair_row(diff: PairDiff) -> JSONObject:
    return {
        "task_id": diff.task_id,
        "strategy": diff.strategy,
        "divergence_step": diff.divergence_step,
        "missing": [f.literal for f in diff.missing],
        "classes": sorted({f.retention or "?" for f in diff.missing}),
        "checkpoints": sorted({f.checkpoint_name for f in diff.missing}),
        "blocking": diff.blocking,
        "failure": "; ".join(diff.compressed_reasons),
    }


@contextlib.contextmanager
def tracked_job(
    config: ExperimentConfig,
    job: str,
    *,
    strategy: str | None = None,
    split: str | None = None,
    agent: str | None = None,
    log: Callable[[str], None] | None = None,
) -> Iterator[Guarded | None]:
    """The parent run of an `acon run` / `acon compare` job; None when tracking is off. A server that stops
    answering leaves the run's records journaled (see `outage`), logged when the command is run again."""
    tracker = tracker_from_config(config)
    if not tracker.enabled:
        yield None
        return
    tags = experiment_tags(config, strategy=strategy, split=split, agent=agent)
    store = cast("MlflowTracker", tracker).store  # enabled: the MLflow tracker
    # `run` and `compare` record the same way: a rerun of either logs what the other missed on a run directory.
    guard = Guarded(JobTracking(tracker, config), store, config.out_dir, log or _warn, scope="run")
    with job_run(guard, tracker.job_run(job, params=experiment_params(config), tags=tags)):
        yield guard


@contextlib.contextmanager
def tracker_for(config: ExperimentConfig, log: Callable[[str], None] | None = None) -> Iterator[Guarded | None]:
    """The parent run of an `acon optimize` job and the subscriber to its events; None when tracking is off.

    What an earlier run of the job could not log (its server gone mid-job) is logged once this run's own
    events have gone through the subscriber again (`catch_up`): a failure is paired with the full-context
    run only once that run is known, and what this run logged itself is not replayed.
    """
    tracker = tracker_from_config(config)
    if not tracker.enabled:
        yield None
        return
    tags = experiment_tags(config, strategy="guideline", split="train", agent=config.optimize.screen_agent)
    store = cast("MlflowTracker", tracker).store  # enabled: the MLflow tracker
    say = log or _warn
    guard = Guarded(OptimizeTracking(tracker, config), store, config.out_dir, say, scope="optimize")
    with job_run(guard, tracker.job_run("optimize", params=experiment_params(config, optimize=True), tags=tags)):
        yield guard
        if guard.missed:
            logged = guard.catch_up(config.cost.primary)
            say(f"tracking: caught up {logged} update(s) an earlier run of this job could not log")


def _warn(message: str) -> None:
    print(f"acon: {message}", file=sys.stderr)
