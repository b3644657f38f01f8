"""`acon optimize`: the ACON loop with tiered selection, checkpointed step by step.

    baseline    `none` on the train split, run once (tier 0, and tier 1 on the confirmation tasks)
    each round  evaluate the current guideline → pairs → provenance diffs → LLM diagnoses
                UT: deterministic patch + K LLM rewrites → validate → screen (tier 0)
                CO: tighter variants + K LLM shortenings of the best → validate → screen (tier 0)
                confirm the best few with the llm agent (tier 1, within the episode budget)
                update the Pareto front; stop when it does not move or the budget is spent
    final       the chosen guideline vs `none`, the seed and the baselines on the test split

Every evaluation is a resumable run directory, every proposal batch and the loop state are written
atomically, so a killed job resumes where it stopped without redoing or duplicating work.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optimizer.agent.episode import Episode
from optimizer.config import ExperimentConfig
from optimizer.context.guideline import Guideline, read_guideline
from optimizer.context.strategies import GuidelineStrategy, parse_strategy
from optimizer.context.strategies.base import ContextStrategy
from optimizer.errors import ConfigError
from optimizer.evaluate.endpoints import ModelEndpoints
from optimizer.evaluate.jobs import RunResult, run_strategy, select_tasks
from optimizer.evaluate.store import EpisodeStore
from optimizer.mining.pairs import compressed_successes, find_pairs
from optimizer.mining.provenance import PairDiff, diff_pair
from optimizer.mining.report import diff_html, diff_markdown
from optimizer.search.analysis import unused_content
from optimizer.search.candidate import Candidate, Proposal
from optimizer.search.deterministic import patch_from_diffs, tighten
from optimizer.search.select import Point, improves_front, objective, pareto_front
from optimizer.search.state import JobDir
from optimizer.search.validate import ToolOutputIndex, validate
from optimizer.world.task import Task

Log = Callable[[str], None]
OnEpisode = Callable[[Episode], None]


@dataclass
class Budget:
    agent_episodes: int = 0
    compressor_calls: int = 0
    optimizer_tokens: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"agent_episodes": self.agent_episodes, "compressor_calls": self.compressor_calls,
                "optimizer_tokens": self.optimizer_tokens}


@dataclass
class JobState:
    round: int = 0
    current: str | None = None
    seed: str | None = None
    candidates: dict[str, dict[str, Any]] = field(default_factory=dict)
    rounds: list[dict[str, Any]] = field(default_factory=list)
    optimizer_tokens: int = 0
    # Optimizer tokens of each checkpointed step (see `_load_or`): a step redone after a crash replaces its
    # count instead of adding to it.
    step_tokens: dict[str, int] = field(default_factory=dict)
    stopped: str | None = None
    done: bool = False

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobState:
        return cls(**data)


class OptimizationJob:
    def __init__(
        self, config: ExperimentConfig, *, resume: bool = False, log: Log = print,
        progress: Callable[[str, int], contextlib.AbstractContextManager[OnEpisode]] | None = None,
        tracker: Any = None,
    ) -> None:
        self.config = config
        self.options = config.optimize
        # Everything a new job can be refused for is checked before its directory is claimed.
        self.train: list[Task] = select_tasks(config, "train", self.options.train_limit)
        self.test: list[Task] = select_tasks(config, "test", self.options.test_limit)
        self._seed_guideline = None if resume else seed_guideline(config.guideline)
        self.dir = JobDir(config.out_dir)
        saved = self.dir.claim(config, resume=resume)
        self.state = JobState.from_dict(saved) if saved else JobState()
        self.log = log
        self.progress = progress
        self.tracker = tracker
        self.endpoints: ModelEndpoints | None = None
        self.outputs = ToolOutputIndex()
        self.confirm_tasks = self.train[: self.options.confirm_limit]
        self._proposer = None
        self._accounted_tokens = 0
        self._tracked: set[str] = set()  # candidates whose tracking hook ran in this process

    # ----------------------------------------------------------------------------------- running

    def run(self, track: Callable[[OptimizationJob], contextlib.AbstractContextManager[Any]] | None = None
            ) -> dict[str, Any]:
        """Run (or resume) the job. `track(job)`: the tracking context, opened once every endpoint answers."""
        from optimizer.search.report import build_report

        roles = {"compressor": self.config.endpoints.compressor}
        if self.options.diagnose or self.options.candidates:
            roles["optimizer"] = self.config.endpoints.optimizer
        if self._needs_llm_agent():
            roles["agent"] = self.config.endpoints.agent
        with ModelEndpoints(roles, log=self.log) as endpoints, (
            track(self) if track is not None else contextlib.nullcontext(self.tracker)
        ) as tracker:
            self.endpoints = endpoints
            self.tracker = tracker
            if self.state.seed is None:
                seed = self._seed_guideline or seed_guideline(self.config.guideline)
                unpinned = seed.policy.unpinned_required()
                if unpinned:
                    names = ", ".join(c.value for c in unpinned)
                    self.log(f"note: the seed leaves {names} unpinned; learned guidelines must pin it (contract)")
                self.state.seed = seed.version
                self.state.current = seed.version
                self._remember(Candidate(seed, "seed", 0))
                self._save()
            self.none_train = self.evaluate(parse_strategy("none"), self.train, "train", self.options.screen_agent)
            self._index_outputs(self.none_train.episodes)
            self.none_confirm = (
                self.evaluate(parse_strategy("none"), self.confirm_tasks, "train", "llm")
                if self._tier1_enabled() else None
            )
            self._screen(self._candidate(self.state.seed))
            if self.options.search == "gepa":
                self._gepa()
            while not self.state.done and self.state.round < self.options.rounds:
                self._round(self.state.round + 1)
            if not self.state.done:
                self.state.done = True
                self.state.stopped = self.state.stopped or f"ran all {self.options.rounds} rounds"
                self._save()
            report = build_report(self)
        return report

    def _round(self, index: int) -> None:
        self.log(f"round {index}: evaluating current guideline {self.state.current}")
        current = self._candidate(self.state.current)
        front_before = self.front()
        current_run = self._screen(current)
        rdir = self.dir.round_dir(index)

        pairs = find_pairs(self.none_train.episodes, current_run.episodes)
        diffs = self._diffs(index, pairs)
        self.log(f"round {index}: {len(pairs)} pair(s) where compression broke a task full context solved")

        ut_props = self._load_or(
            f"rounds/{index:02d}/ut_proposals.json", lambda: self._ut_proposals(index, current, diffs)
        )
        ut = self._admit(ut_props, current, index)
        best_ut = self._best([current, *ut])

        successes = compressed_successes(self.none_train.episodes, self._screen(best_ut).episodes)
        co_props = self._load_or(
            f"rounds/{index:02d}/co_proposals.json", lambda: self._co_proposals(index, best_ut, successes)
        )
        co = self._admit(co_props, best_ut, index)

        self._confirm(self._ranked([current, *ut, *co])[: self.options.confirm_top])
        chosen = self._best([current, *ut, *co])
        front_after = self.front()
        improved = improves_front(front_before, front_after) or self._score(chosen) > self._score(current) + 1e-9
        summary = {
            "round": index, "pairs": len(pairs), "current": current.version, "chosen": chosen.version,
            "candidates": [c.version for c in [*ut, *co]],
            # Every candidate of this round that may not be chosen: refused by the validator (never screened,
            # so absent from `ut` and `co`) or by the tier-1 confirmation.
            "rejected": [{"origin": c.origin, "version": c.version, "reason": c.rejected}
                         for c in self.candidates() if c.round == index and c.rejected],
            "pareto": [p.to_dict() for p in front_after], "improved": improved,
        }
        self.dir.write_json(f"{rdir.relative_to(self.dir.path)}/summary.json", summary)
        self.state.rounds = [r for r in self.state.rounds if r["round"] != index] + [summary]
        self.state.round = index
        self.state.current = chosen.version
        if not improved:
            self.state.done = True
            self.state.stopped = f"round {index} brought no Pareto improvement"
        self._save()
        self.log(f"round {index}: chose {chosen.guideline.name}@{chosen.version} "
                 f"({len(ut) + len(co)} candidates, front size {len(front_after)})")

    def _gepa(self) -> None:
        from optimizer.search.gepa_search import run_gepa

        if self.state.done:
            return
        best, counts = run_gepa(self)
        self.state.current = self._best([self.seed(), best]).version
        self.state.rounds = [{
            "round": 1, "pairs": 0, "current": self.state.seed, "chosen": self.state.current,
            "candidates": [best.version], "rejected": [], "pareto": [p.to_dict() for p in self.front()],
            "improved": self.state.current != self.state.seed, **counts,
        }]
        self.state.round = 1
        self.state.done = True
        self.state.stopped = f"GEPA used its budget of {self.options.gepa_metric_calls} tier-0 episodes"
        self._save()

    def remember_screened(self, candidate: Candidate) -> Candidate:
        if candidate.version in self.state.candidates:
            return self._candidate(candidate.version)
        self._remember(candidate)
        self._screen(candidate)
        return self._candidate(candidate.version)

    # -------------------------------------------------------------------------------- proposals

    def _ut_proposals(self, index: int, current: Candidate, diffs: Sequence[PairDiff]) -> list[Proposal]:
        proposals: list[Proposal] = []
        proposals += patch_from_diffs(current.guideline, diffs)
        if self.options.candidates and diffs:
            diagnoses = self._load_or(f"rounds/{index:02d}/diagnoses.json", lambda: self._diagnose(diffs))
            proposals += self.proposer().propose(
                current.guideline, diagnoses, diffs, k=self.options.candidates, round_index=index
            )
        return proposals

    def _co_proposals(self, index: int, best: Candidate, successes: Sequence[Episode]) -> list[Proposal]:
        proposals = tighten(best.guideline)
        if self.options.candidates and successes:
            analysis = unused_content(successes)
            proposals += self.proposer().shorten(best.guideline, analysis, k=self.options.candidates, round_index=index)
        return proposals

    def _diagnose(self, diffs: Sequence[PairDiff]) -> list[dict[str, str]]:
        tasks = {t.id: t for t in self.train}
        out = []
        for diff in diffs[: self.options.diagnose]:
            out.append(self.proposer().diagnose(diff, tasks[diff.task_id].instruction))
        return out

    def proposer(self):
        if self._proposer is None:
            from optimizer.search.programs import LlmProposer

            self._proposer = LlmProposer(self.endpoints.client("optimizer"), seed=self.config.seed)
        return self._proposer

    def _load_or(self, relative: str, make: Callable[[], Any]) -> Any:
        """Checkpointed step: reuse what a previous (killed) run of this job already produced.

        The step's optimizer tokens are saved with the state before its result is written, keyed by the
        step: a job killed between the two redoes the step and replaces that count rather than adding to it.
        """
        proposals = relative.endswith("proposals.json")
        saved = self.dir.read_json(relative)
        if saved is not None:
            try:
                return [_proposal_from(p) for p in saved] if proposals else list(saved)
            except (TypeError, KeyError, ConfigError):
                self.log(f"{relative} is damaged; redoing that step")
        result = make()
        tokens = self._new_optimizer_tokens()
        self.state.optimizer_tokens += tokens - self.state.step_tokens.get(relative, 0)
        self.state.step_tokens[relative] = tokens
        self._save()
        self.dir.write_json(relative, [_proposal_to(p) for p in result] if proposals else result)
        return result

    def _new_optimizer_tokens(self) -> int:
        """Optimizer tokens spent since the last call."""
        if self._proposer is None:
            return 0
        tokens = self._proposer.tokens - self._accounted_tokens
        self._accounted_tokens = self._proposer.tokens
        return tokens

    def _admit(self, proposals: Sequence[Proposal], parent: Candidate, index: int) -> list[Candidate]:
        admitted = []
        for proposal in proposals:
            if proposal.guideline is None:
                self.log(f"round {index}: {proposal.origin} proposal failed: {proposal.error}")
                continue
            version = proposal.guideline.version
            if version in self.state.candidates:
                existing = self._candidate(version)
                if existing.rejected is None:
                    self._screen(existing)  # a job killed while screening it finishes the screen now
                    admitted.append(self._candidate(version))
                continue
            candidate = Candidate(proposal.guideline, proposal.origin, index, parent=parent.version,
                                  rationale=proposal.rationale)
            candidate.rejected = validate(
                proposal.guideline, parent.guideline, self.outputs, max_chars=self.options.max_guideline_chars
            )
            self._remember(candidate)
            if candidate.rejected:
                self.log(f"round {index}: rejected {proposal.origin} candidate: {candidate.rejected}")
                continue
            self._screen(candidate)
            admitted.append(self._candidate(version))
        return admitted

    # ------------------------------------------------------------------------------- evaluation

    def _screen(self, candidate: Candidate) -> RunResult:
        result = self.evaluate(self._strategy(candidate), self.train, "train", self.options.screen_agent)
        if candidate.screen is None:
            candidate.screen = _scores(result)
            self._remember(candidate)
        # Once per process: a resumed job logs again (idempotently) what a killed one may not have finished.
        if self.tracker is not None and candidate.version not in self._tracked:
            self.tracker.on_candidate(self, self._candidate(candidate.version), result)
            self._tracked.add(candidate.version)
        return result

    def _confirm(self, candidates: Sequence[Candidate]) -> None:
        if not self._tier1_enabled():
            return
        for candidate in candidates:
            if candidate.confirm is not None:
                continue
            if self._agent_episodes() + len(self.confirm_tasks) > self.options.max_agent_episodes:
                self.log("tier-1 episode budget spent; remaining candidates stay unconfirmed")
                return
            result = self.evaluate(self._strategy(candidate), self.confirm_tasks, "train", "llm")
            candidate.confirm = _scores(result)
            none_success = _scores(self.none_confirm)["success"]
            drop = none_success - candidate.confirm["success"]
            if drop > self.config.acceptance.max_success_drop:
                candidate.rejected = f"tier-1 success {candidate.confirm['success']:.2f} vs none {none_success:.2f}"
            self._remember(candidate)

    def evaluate(self, strategy: ContextStrategy, tasks: Sequence[Task], split: str, agent: str) -> RunResult:
        label = f"{strategy.label()} [{agent}, {split}, {len(tasks)} tasks]"
        progress = self.progress(label, len(tasks)) if self.progress else contextlib.nullcontext(None)
        with progress as advance:
            result = run_strategy(
                self.config, tasks, strategy, agent=agent, endpoints=self.endpoints, split=split,
                on_episode=advance, base=self.dir.path / "runs",
            )
        if self.tracker is not None:
            self.tracker.on_run(self, result, agent=agent, split=split)
        return result

    def _diffs(self, index: int, pairs: Sequence[tuple[Episode, Episode]]) -> list[PairDiff]:
        tasks = {t.id: t for t in self.train}
        diffs = [diff_pair(full, compressed, tasks.get(full.task_id)) for full, compressed in pairs]
        rdir = f"rounds/{index:02d}"
        self.dir.write_json(f"{rdir}/diffs.json", [d.to_dict() for d in diffs])
        for diff in diffs:
            self.dir.write_text(f"{rdir}/diffs/{diff.task_id}.md", diff_markdown(diff))
            self.dir.write_text(f"{rdir}/diffs/{diff.task_id}.html", diff_html(diff))
        if self.tracker is not None:
            self.tracker.on_diffs(self, index, diffs)
        return diffs

    # ---------------------------------------------------------------------------------- helpers

    def _strategy(self, candidate: Candidate) -> GuidelineStrategy:
        return GuidelineStrategy(guideline=candidate.guideline)

    def _candidate(self, version: str) -> Candidate:
        return Candidate.from_dict(self.state.candidates[version])

    def _remember(self, candidate: Candidate) -> None:
        self.state.candidates[candidate.version] = candidate.to_dict()
        self.dir.write_text(f"guidelines/{candidate.version}.md", candidate.guideline.to_markdown())
        self._save()

    def _save(self) -> None:
        self.dir.save_state(self.state.to_dict())

    def peak_none(self) -> float:
        return _scores(self.none_train)["peak_tokens_mean"]

    def _score(self, candidate: Candidate) -> float:
        screen = candidate.screen or {"success": 0.0, "peak_tokens_mean": float("inf")}
        return objective(screen["success"], screen["peak_tokens_mean"], self.peak_none(),
                         mode=self.options.objective, lam=self.options.lam)

    def _ranked(self, candidates: Sequence[Candidate]) -> list[Candidate]:
        """Best objective first; on a tie the current guideline stays (no churn without a gain)."""
        unique = {c.version: self._candidate(c.version) for c in candidates}
        return sorted(unique.values(), key=lambda c: (-self._score(c), c.version != self.state.current, c.version))

    def _best(self, candidates: Sequence[Candidate]) -> Candidate:
        ranked = [c for c in self._ranked(candidates) if c.rejected is None]
        return ranked[0] if ranked else self._candidate(candidates[0].version)

    def front(self) -> list[Point]:
        return pareto_front(self.points())

    def points(self) -> list[Point]:
        none = _scores(self.none_train)
        none_confirm = _scores(self.none_confirm) if self.none_confirm is not None else None
        points = [Point("none", "none", "baseline", none["success"], none["peak_tokens_mean"],
                        **_confirm_fields(none_confirm))]
        for data in self.state.candidates.values():
            candidate = Candidate.from_dict(data)
            if candidate.screen is not None and candidate.rejected is None:
                points.append(Point(f"{candidate.origin}:{candidate.guideline.name}", candidate.version, "candidate",
                                    candidate.screen["success"], candidate.screen["peak_tokens_mean"], candidate.round,
                                    **_confirm_fields(candidate.confirm)))
        return points

    def candidates(self) -> list[Candidate]:
        return [Candidate.from_dict(d) for d in self.state.candidates.values()]

    def chosen(self) -> Candidate:
        return self._candidate(self.state.current)

    def seed(self) -> Candidate:
        return self._candidate(self.state.seed)

    def budget(self) -> Budget:
        """What the recorded episodes cost: the newest record of each task in each run directory."""
        episodes = [e for run in self.run_dirs() for e in EpisodeStore(run).latest()]
        calls = sum(
            1 for e in episodes for r in e.get("records", [])
            if r.get("compressor_usage") and not r.get("compressor_cached")
        )
        return Budget(self._agent_episodes(), calls, self.state.optimizer_tokens)

    def run_dirs(self) -> list[Path]:
        return sorted(p.parent for p in (self.dir.path / "runs").glob("*/episodes.jsonl"))

    def _agent_episodes(self) -> int:
        return sum(len(EpisodeStore(run).latest()) for run in self.run_dirs() if "-llm-" in run.name)

    def _tier1_enabled(self) -> bool:
        return self.options.confirm_top > 0 and self.options.confirm_limit > 0 and self.options.max_agent_episodes > 0

    def _needs_llm_agent(self) -> bool:
        return self._tier1_enabled() or self.options.screen_agent == "llm" or self.options.final_llm_limit > 0

    def _index_outputs(self, episodes: Sequence[Episode]) -> None:
        for episode in episodes:
            for entry in episode.entries:
                if entry["kind"] == "result":
                    self.outputs.add(episode.text(entry["raw"]))


def seed_guideline(path: str) -> Guideline:
    """The job's starting guideline, read and validated (a broken file fails here, before anything runs).

    A seed may leave contract-pinned classes unpinned, as plain ACON does: that is the user's starting
    point, measured as given. Only what the optimizer proposes must pin them (the validator), and the
    deterministic patch proposes the pin as soon as a diff shows such a loss.
    """
    return read_guideline(path)


def _scores(result: RunResult) -> dict[str, Any]:
    s = result.summary
    return {
        "success": s["success"], "success_ci": s["success_ci"], "peak_tokens_mean": s["peak_tokens_mean"],
        "peak_tokens_max": s["peak_tokens_max"], "dependency_mean": s["dependency_mean"],
        "total_tokens": s["total_tokens"], "compressor_tokens": s["compressor_tokens"], "tasks": s["scored"],
        "infra_errors": s["infra_errors"], "blocking": s["blocking"], "cost_per_success": s["cost_per_success"],
        "directory": str(result.directory),
    }


def _confirm_fields(confirm: dict[str, Any] | None) -> dict[str, float | None]:
    if confirm is None:
        return {"confirm_success": None, "confirm_peak_tokens": None}
    return {"confirm_success": confirm["success"], "confirm_peak_tokens": confirm["peak_tokens_mean"]}


def _proposal_to(proposal: Proposal) -> dict[str, Any]:
    return {
        "origin": proposal.origin, "rationale": proposal.rationale, "error": proposal.error,
        "optimizer_tokens": proposal.optimizer_tokens,
        "guideline": proposal.guideline.to_markdown() if proposal.guideline is not None else None,
    }


def _proposal_from(data: dict[str, Any]) -> Proposal:
    guideline = Guideline.from_markdown(data["guideline"], source="proposal") if data["guideline"] else None
    return Proposal(data["origin"], guideline, data["rationale"], data["error"], data["optimizer_tokens"])
