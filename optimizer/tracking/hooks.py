"""What acon's jobs log: the hooks `OptimizationJob` calls, and `record_run` for `acon run` / `acon compare`.

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
from typing import TYPE_CHECKING, Any, cast

from optimizer.agent.episode import Episode
from optimizer.agent.kinds import AGENTS
from optimizer.config import ExperimentConfig
from optimizer.evaluate.strategy_runs import RunResult, episode_row
from optimizer.search.front import Point
from optimizer.search.report_file import report_json
from optimizer.search.report_markdown import report_markdown
from optimizer.tracking.base import Tracker
from optimizer.tracking.front_page import VIEW_KEY, description, review_view
from optimizer.tracking.outage import Guarded, job_run
from optimizer.tracking.params import experiment_params, experiment_tags, flatten, tier_of
from optimizer.tracking.pareto import ParetoPoint

if TYPE_CHECKING:
    from optimizer.mining.pair_diff import PairDiff
    from optimizer.search.candidate import Candidate
    from optimizer.search.job import OptimizationJob
    from optimizer.search.proposers.base import Pair
    from optimizer.search.report_model import Report
    from optimizer.tracking.mlflow_tracker import MlflowTracker

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


def numeric(data: Mapping[str, Any], keys: Sequence[str], prefix: str = "") -> dict[str, float]:
    """The numeric values among `keys` (bools as 0/1), rounded as the runs list should show them; None and
    non-numbers are left out."""
    return {f"{prefix}{k}": rounded(k, float(data[k])) for k in keys if isinstance(data.get(k), int | float)}


def rounded(key: str, value: float) -> float:
    """Token counts to whole tokens (a mean peak of 1715.33333 reads as 1715), rates and costs to 4 places."""
    if "tokens" in key or key.startswith("dependency"):
        return float(round(value))
    return round(value, 4)


class JobTracking:
    """Records evaluation runs into a tracker: one child run per run directory, episodes traced."""

    def __init__(self, tracker: Tracker, config: ExperimentConfig) -> None:
        self.tracker = tracker
        self.config = config
        self._recorded: set[str] = set()

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
        params = {"strategy": strategy.model_dump(mode="json"), "tasks": len(result.episodes)}
        if strategy.type == "guideline":
            params["strategy"] = {"type": "guideline", "version": strategy.version()}
        name = f"{strategy.label()} · {agent} · {split}"
        measured = RUN_METRICS if AGENTS.get(agent).uses_model else tuple(m for m in RUN_METRICS if m not in AGENT_ONLY)
        with self.tracker.child_run(key, name, params=flatten(params), tags=tags, times_ms=_times(result)):
            self.tracker.log_metrics(numeric(result.summary, measured))
            self.tracker.log_table([episode_row(e) for e in result.episodes], "tables/episodes.json")
            trace_tags = {"acon.split": split, "acon.tier": tier_of(agent)}
            for episode in result.episodes:
                self.tracker.trace_episode(episode, trace_tags)
        self._recorded.add(key)


class OptimizeTracking(JobTracking):
    """The hooks `OptimizationJob` calls (`on_run`, `on_candidate`, `on_diffs`, `on_report`)."""

    def __init__(self, tracker: Tracker, config: ExperimentConfig) -> None:
        super().__init__(tracker, config)
        self._rounds_logged: set[int] = set()
        # Full-context episodes by (split, agent): `none` runs first on every split, so each later failure
        # is paired with its full-context run as soon as it is recorded, mined or not.
        self._full: dict[tuple[str, str], dict[str, Episode]] = {}

    def on_run(self, job: OptimizationJob, result: RunResult, *, agent: str, split: str) -> None:
        with contextlib.ExitStack() as stack:
            for key, name in self._parents(job, result, split):
                stack.enter_context(self.tracker.child_run(key, name))
            fresh = f"eval/{result.directory.name}" not in self._recorded
            self.record_run(result, agent=agent, split=split)
            if fresh:
                self._pair_failures(job, result, agent=agent, split=split)

    def _pair_failures(self, job: OptimizationJob, result: RunResult, *, agent: str, split: str) -> None:
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
        tasks = {t.id: t for t in (*job.train, *job.val, *job.test)}
        for baseline, episode in find_pairs(list(full.values()), result.episodes):
            diff = diff_pair(baseline, episode, tasks.get(episode.task_id))
            path = self.tracker.log_pair_diff(episode.task_id, diff_html(diff), diff_markdown(diff))
            self.tracker.mark_pair(diff, baseline, episode, path)

    def on_candidate(self, job: OptimizationJob, candidate: Candidate, result: RunResult) -> None:
        guideline = candidate.guideline
        with (
            self._round(candidate.round),
            self.tracker.child_run(
                f"candidate/{candidate.version}",
                _candidate_name(candidate),
                params={
                    "origin": candidate.origin,
                    "round": candidate.round,
                    "parent": candidate.parent,
                    "guideline": candidate.version,
                },
                tags={"acon.guideline": candidate.version, "origin": candidate.origin, "round": str(candidate.round)},
            ),
        ):
            train = candidate.screens.get("train")
            screen = numeric(train.headline() if train else {}, SCORE_METRICS, "screen_")
            self.tracker.log_metrics(screen, step=candidate.round)
            self.tracker.log_guideline(guideline, candidate.round)
            parent = job.state.candidates.get(candidate.parent or "")
            if parent is not None:
                old = parent.guideline
                self.tracker.log_guideline_diff(old, guideline, name=f"vs-parent-{old.version}")
            if candidate.rationale:
                self.tracker.log_text(candidate.rationale, "rationale.md")
            self.tracker.register_guideline(
                guideline, tags=_version_tags(candidate, screen), message=_commit_message(candidate)
            )
        self._sync_rounds(job)

    def on_diffs(self, job: OptimizationJob, index: int, pairs: Sequence[Pair]) -> None:
        self.log_diffs(index, [p.diff for p in pairs], pairs)
        self._sync_rounds(job)

    def log_diffs(self, index: int, diffs: Sequence[PairDiff], pairs: Sequence[Pair] = ()) -> None:
        """A round's pair diffs (files, table, counts) in its round run; given the pairs, their traces tagged."""
        from optimizer.mining.diff_render import diff_html, diff_markdown

        with self._round(index):
            for i, diff in enumerate(diffs):  # several candidates may lose the same task: a file per (task, candidate)
                name = f"{diff.task_id}-{diff.strategy.rsplit('@', 1)[-1]}"
                path = self.tracker.log_pair_diff(name, diff_html(diff), diff_markdown(diff), round=index)
                if pairs:
                    self.tracker.mark_pair(diff, pairs[i].full, pairs[i].compressed, path)
            self.tracker.log_table([_pair_row(d) for d in diffs], "tables/pairs.json")
            missing = sum(len(d.missing) for d in diffs)
            self.tracker.log_metrics({"pairs": len(diffs), "missing_facts": missing}, step=index)
        self.tracker.log_metrics({"pairs": len(diffs)}, step=index)

    def on_report(self, job: OptimizationJob, report: Report) -> None:
        self._sync_rounds(job)
        step = job.state.round
        chosen, seed = job.chosen(), job.seed()
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
            step=step,
        )
        self.tracker.set_tags({"acon.chosen": chosen.version, "acon.stopped": report.stopped})
        for tier, verdict in report.acceptance.tiers.items():
            self.tracker.set_tags({f"acon.acceptance.{tier}": "pass" if verdict.passed else "fail"})
        self.tracker.log_guideline(chosen.guideline)
        self.tracker.log_guideline_diff(seed.guideline, chosen.guideline, name="seed-to-chosen")
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
        for candidate in job.candidates():
            # Only a candidate screened on the whole train split was registered (`on_candidate`): one rejected
            # after its subset screen (the compressor budget ran out) has no prompt version to tag.
            if candidate.rejected and "train" in candidate.screens and candidate.version != chosen.version:
                self.tracker.tag_guideline(
                    candidate.guideline, {"acon.status": "rejected", "acon.rejected": candidate.rejected}
                )
        cut = report.cut
        self.tracker.set_best(
            chosen.guideline,
            prompt_tags={
                "acon.status": "chosen",
                "acon.chosen": chosen.version,
                "acon.chosen_candidate": _candidate_name(chosen),
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

    def run_ref(self) -> dict[str, str]:
        """Where the job run lives, for the report to name it."""
        return self.tracker.run_ref()

    # --------------------------------------------------------------------------------------------

    def _parents(self, job: OptimizationJob, result: RunResult, split: str) -> list[tuple[str, str]]:
        """Where an evaluation nests: final (test split), its candidate (a guideline), or the job."""
        if split == "test":
            return [("final", "final: test split")]
        if result.strategy.type != "guideline":
            return []
        version = result.strategy.version()
        candidate = job.state.candidates.get(version)
        if candidate is None:
            return []
        round_index = candidate.round
        return [
            (f"round/{round_index:02d}", _round_name(round_index)),
            (f"candidate/{version}", _candidate_name(candidate)),
        ]

    def _round(self, index: int) -> contextlib.AbstractContextManager[str | None]:
        return self.tracker.child_run(f"round/{index:02d}", _round_name(index), tags={"round": str(index)})

    def _sync_rounds(self, job: OptimizationJob) -> None:
        """Metrics (step = round) and a Pareto plot for every round the job has finished; step 0 is the seed."""
        seed = job.state.candidates.get(job.state.seed or "")
        split = next((k for k in ("train", "subset") if seed is not None and k in seed.screens), None)
        if 0 not in self._rounds_logged and seed is not None and split is not None:
            # A seed that lost to a model-free baseline on the LLM subset is screened on that subset only.
            scores = seed.screens[split]
            # Named by the split they were measured on: the parent run also holds the test split's figures.
            self.tracker.log_metrics(numeric(scores.headline(), SCORE_METRICS, f"{split}_"), step=0)
            self.tracker.set_tags(
                {"acon.step0": f"seed {seed.version}, screened on {split} ({len(scores.tasks)} tasks)"}
            )
            self._rounds_logged.add(0)
        for summary in job.state.rounds:
            index = summary.round
            if index in self._rounds_logged:
                continue
            best = job.state.candidates.get(summary.best)
            screen = best.screens.get("train") if best is not None else None
            self.tracker.log_metrics(
                {
                    **numeric(screen.headline() if screen else {}, SCORE_METRICS, "train_"),
                    "pairs": summary.pairs,
                    "candidates": len(summary.screened),
                    "rejected": len(summary.rejected),
                    # The latest value is what the runs list shows: per round alone it read 0 after a clean round.
                    "pairs_total": sum(r.pairs for r in job.state.rounds if r.round <= index),
                    "pareto_size": len(summary.front),
                    "improved": bool(summary.improved),
                },
                step=index,
            )
            points = [p for p in job.points() if p.kind == "baseline" or p.round <= index]
            with self._round(index):
                # The round's front as the state keeps it (plain records in state.json).
                front = [Point(**p) for p in summary.front]
                self.tracker.log_pareto(_points(points), _front(front), round=index)
            self._rounds_logged.add(index)


def _version_tags(candidate: Candidate, screen: Mapping[str, float]) -> dict[str, str]:
    """What a registered version says about the candidate it came from: name, origin, round, parent, scores."""
    tags = {
        "acon.candidate": _candidate_name(candidate),
        "acon.origin": candidate.origin,
        "acon.round": str(candidate.round),
        "acon.status": "rejected" if candidate.rejected else "screened",
    }
    if candidate.parent:
        tags["acon.parent"] = candidate.parent
    if candidate.rejected:
        tags["acon.rejected"] = candidate.rejected
    tags.update({f"acon.{k}": f"{v:g}" for k, v in screen.items()})
    return tags


def _commit_message(candidate: Candidate) -> str:
    """The version list and compare view show the commit message: the policy goes there, since the texts
    of most candidates are the same and only the policy changed."""
    policy = candidate.guideline.policy.model_dump_json(exclude_defaults=True)
    return f"{_candidate_name(candidate)} (round {candidate.round}); policy {policy}"


def _times(result: RunResult) -> tuple[int, int] | None:
    """(start, end) in epoch ms of an evaluation: its last episode's write, less the episodes' wall time."""
    episodes = result.directory / "episodes.jsonl"
    if not episodes.exists():
        return None
    end = episodes.stat().st_mtime
    return int((end - float(result.summary.get("wall_s") or 0.0)) * 1000), int(end * 1000)


def _round_name(index: int) -> str:
    return "seed" if index == 0 else f"round {index}"


def _candidate_name(candidate: Candidate) -> str:
    return f"{candidate.origin}: {candidate.guideline.name}@{candidate.version}"


def _label(point: Point) -> str:
    return point.label if point.kind == "baseline" else f"{point.label}@{point.version[:6]}"


def _points(points: Sequence[Point]) -> list[ParetoPoint]:
    return [ParetoPoint(_label(p), p.success, p.peak_tokens, baseline=p.kind == "baseline") for p in points]


def _front(front: Sequence[Point]) -> list[str]:
    return [_label(p) for p in front]


def _pair_row(diff: PairDiff) -> dict[str, Any]:
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
    from optimizer.tracking import tracker_from_config

    tracker = tracker_from_config(config)
    if not tracker.enabled:
        yield None
        return
    tags = experiment_tags(config, strategy=strategy, split=split, agent=agent)
    store = cast("MlflowTracker", tracker).store  # enabled: the MLflow tracker
    guard = Guarded(JobTracking(tracker, config), store, config.out_dir, log or _warn)
    with job_run(guard, tracker.job_run(job, params=experiment_params(config), tags=tags)):
        yield guard


@contextlib.contextmanager
def tracker_for(job: OptimizationJob) -> Iterator[Guarded | None]:
    """The parent run of an `acon optimize` job and the hooks it calls; None when tracking is off.

    What an earlier run of the job could not log (its server gone mid-job) is logged once this run's own
    evaluations have gone through the hooks again (`catch_up`): a failure is paired with the full-context
    run only once that run is known, and what this run logged itself is not replayed.
    """
    from optimizer.tracking import tracker_from_config

    config = job.config
    tracker = tracker_from_config(config)
    if not tracker.enabled:
        yield None
        return
    tags = experiment_tags(config, strategy="guideline", split="train", agent=config.optimize.screen_agent)
    store = cast("MlflowTracker", tracker).store  # enabled: the MLflow tracker
    guard = Guarded(OptimizeTracking(tracker, config), store, job.dir.path, job.log)
    with job_run(guard, tracker.job_run("optimize", params=experiment_params(config, optimize=True), tags=tags)):
        yield guard
        if guard.missed:
            logged = guard.catch_up(job)
            job.log(f"tracking: caught up {logged} update(s) an earlier run of this job could not log")


def _warn(message: str) -> None:
    print(f"acon: {message}", file=sys.stderr)
