"""What a search is (`Search`: its settings and one verb) and what every search works with: the screen of a
candidate, its pairs, its rank, and the job's state.

Screening is tiered by cost. A candidate that needs no model (policy moves and extraction only) is
screened on the whole train split, which takes seconds at tier 0. A candidate with an LLM move is
screened first on a small fixed subset of train tasks (where the best model-free candidate fails or
peaks highest), and promoted to the whole split only if it beats that candidate there and the
compressor budget allows. Every screen goes through the evaluator, so a resumed job reads it back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from optimizer.agent.episode import Episode
from optimizer.context.strategies import ContextStrategy, parse_strategy
from optimizer.evaluate.scores import Scores
from optimizer.mining.pair_diff import diff_pair
from optimizer.mining.pairs import compressed_successes, find_pairs
from optimizer.report.front import Point, pareto_front
from optimizer.search import accounting
from optimizer.search.candidate import Candidate, screened
from optimizer.search.evaluator import Evaluation, Evaluator
from optimizer.search.events import CandidateScreened, JobEvent
from optimizer.search.proposers.base import Pair
from optimizer.search.proposers.llm import OptimizerLM
from optimizer.search.ranking import rank_key
from optimizer.search.state import JobDir, SearchState
from optimizer.search.task_order import spread
from optimizer.search.tier1 import Repeats, majority_pairs
from optimizer.search.validate import ToolOutputIndex
from optimizer.world.task import Task

if TYPE_CHECKING:
    from optimizer.config import ExperimentConfig, OptimizeConfig

Log = Callable[[str], None]


@dataclass(frozen=True)
class SearchResult:
    best: Candidate | None
    rounds: int
    stopped: str


class Search(BaseModel):
    """A search: its fields are its settings, the section `[optimize.<type>]`; `run` is its one verb.

    Registered in the `acon.searches` entry-point group like every extension point; `[optimize] search`
    names the one that runs. Every field has a default, so a search's section may be left out. It starts
    from the job's warm-started candidates (`ctx.state`) and leaves its candidates there, screened through
    `ctx`, for the job to select from.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str

    @property
    def uses_optimizer(self) -> bool:
        """Whether it calls the optimizer LLM (the job starts that endpoint only then)."""
        return False

    def run(self, ctx: SearchContext) -> SearchResult:
        raise NotImplementedError


@dataclass
class SearchContext:
    config: ExperimentConfig
    evaluator: Evaluator
    state: SearchState
    dir: JobDir
    train: list[Task]
    none_train: Evaluation
    subset: list[str]  # the train tasks LLM-compressing candidates are screened on first
    outputs: ToolOutputIndex
    log: Log
    save: Callable[[], None]
    llm: OptimizerLM | None = None
    # Where the search's events go (`CandidateScreened`, `RoundMined`); None: nobody listens.
    publish: Callable[[JobEvent], None] | None = None
    # Full context at tier 1 on the confirmation tasks, once a candidate has been confirmed there.
    none_confirm: Scores | None = None
    _evaluations: dict[tuple[str, str], Evaluation] = field(default_factory=dict)
    _pairs: dict[tuple[str, bool], list[Pair]] = field(default_factory=dict)
    _tier1_pairs: dict[tuple[str, int], list[Pair]] = field(default_factory=dict)

    @property
    def options(self) -> OptimizeConfig:
        return self.config.optimize

    @property
    def tolerance(self) -> float:
        drop = self.options.selection.max_success_drop
        return self.config.acceptance.max_success_drop if drop is None else drop

    # ----------------------------------------------------------------------------------- screening

    def remember(self, candidate: Candidate) -> Candidate:
        known = self.state.candidates.get(candidate.version)
        if known is not None:
            return known
        self.state.candidates[candidate.version] = candidate
        self.dir.write_text(f"guidelines/{candidate.version}.md", candidate.guideline.to_markdown())
        self.save()
        return candidate

    def screen(self, candidate: Candidate) -> Candidate:
        """Screen on the train split (or first on the subset, for an LLM-compressing candidate)."""
        candidate = self.remember(candidate)
        if candidate.rejected:
            return candidate
        if candidate.uses_compressor and self.subset and len(self.subset) < len(self.train):
            subset = self._screen_on(candidate, "subset", [t for t in self.train if t.id in self.subset])
            if "train" not in candidate.screens:
                if not self._beats_best_on_subset(candidate, subset):
                    return candidate
                if self.over_budget(len(self.train) - len(self.subset)):
                    candidate.rejected = "compressor budget spent before its full screen (subset only)"
                    self.save()
                    return candidate
        self._screen_on(candidate, "train", self.train)
        return candidate

    def _screen_on(self, candidate: Candidate, name: str, tasks: Sequence[Task]) -> Scores:
        evaluation = self.evaluate(candidate, name, tasks, "train", self.options.screen_agent)
        if name not in candidate.screens:
            candidate.screens[name] = evaluation.scores
            # Published before the checkpoint: a kill between the two re-screens on resume (its episodes are
            # reused) and tracks again, where every write is keyed or idempotent. The other order lost the
            # candidate's prompt versions for good: the checkpoint already said it was done.
            if self.publish is not None and name == "train":
                parent = self.state.candidates.get(candidate.parent or "")
                self.publish(CandidateScreened.of(candidate, parent))
            self.save()
        return candidate.screens[name]

    def evaluate(self, candidate: Candidate, name: str, tasks: Sequence[Task], split: str, agent: str) -> Evaluation:
        key = (candidate.version, name)
        if key not in self._evaluations:
            strategy = screened(candidate.guideline)
            self._evaluations[key] = self.evaluator.evaluate(strategy, tasks, split, agent)
        return self._evaluations[key]

    def _beats_best_on_subset(self, candidate: Candidate, subset: Scores) -> bool:
        best = self.best(model_free=True)
        if best is None or "train" not in best.screens:
            return True
        theirs = best.screens["train"].on([t.task_id for t in subset.tasks])
        none = self.none_train.scores.on([t.task_id for t in subset.tasks])
        mine = self.key(subset, none)
        if mine >= self.key(theirs, none):
            return True
        self.log(
            f"{candidate.guideline.name}@{candidate.version}: not better than {best.guideline.name} on the "
            f"{len(subset.tasks)}-task subset; stays subset-only"
        )
        return False

    def over_budget(self, more_tasks: int = 0) -> bool:
        """Whether screening `more_tasks` more LLM episodes would exceed the compressor-call budget."""
        limit = self.options.budget.max_compressor_calls
        if limit is None:
            return False
        spent = sum(s.compressor_calls for c in self.state.candidates.values() for s in c.screens.values())
        per_task = max(
            (
                s.compressor_calls / s.n
                for c in self.state.candidates.values()
                for s in c.screens.values()
                if s.n and s.compressor_calls
            ),
            default=1.0,
        )
        return spent + per_task * more_tasks > limit

    # -------------------------------------------------------------------------------------- ranking

    def feasible(self, scores: Scores, none: Scores) -> bool:
        """Success within the tolerance of full context's on the same tasks."""
        return scores.success >= none.success - self.tolerance - 1e-9

    def key(self, scores: Scores, none: Scores) -> tuple[float, ...]:
        return rank_key(
            scores.success,
            scores.peak_mean,
            none_success=none.success,
            none_peak=none.peak_mean,
            objective=self.options.selection.objective,
            lam=self.options.selection.lam,
            tolerance=self.tolerance,
            cost=scores.projected_cost_per_success,
            none_cost=none.projected_cost_per_success,
        )

    def ranked(self, *, model_free: bool = False, before_round: int | None = None) -> list[Candidate]:
        """Candidates fully screened on train and not rejected, best first (ties: fewer compressor calls).

        `before_round`: only candidates proposed before that round (what a round started from, also when it
        is resumed after some of its own candidates were screened)."""
        none = self.none_train.scores
        pool = [
            c
            for c in self.state.candidates.values()
            if "train" in c.screens
            and not c.rejected
            and not (model_free and c.uses_compressor)
            and (before_round is None or c.round < before_round)
        ]
        return sorted(
            pool,
            key=lambda c: (
                self.key(c.screens["train"], none),
                -c.screens["train"].compressor_calls,
                -c.round,
                c.version,
            ),
            reverse=True,
        )

    def best(self, *, model_free: bool = False) -> Candidate | None:
        ranked = self.ranked(model_free=model_free)
        return ranked[0] if ranked else None

    def points(self, screen: str = "train", *, before_round: int | None = None) -> list[Point]:
        none = self.none_train.scores
        confirmed = self.none_confirm
        points = [
            Point(
                "none",
                "none",
                "baseline",
                none.success,
                none.peak_mean,
                0,
                confirmed.success if confirmed else None,
                confirmed.peak_mean if confirmed else None,
            )
        ]
        for c in self.state.candidates.values():
            if screen in c.screens and not c.rejected and (before_round is None or c.round < before_round):
                s = c.screens[screen]
                confirm = c.screens.get("confirm")
                kind = "baseline" if c.origin.startswith("baseline:") else "candidate"
                points.append(
                    Point(
                        f"{c.origin}:{c.guideline.name}",
                        c.version,
                        kind,
                        s.success,
                        s.peak_mean,
                        c.round,
                        confirm.success if confirm else None,
                        confirm.peak_mean if confirm else None,
                    )
                )
        return points

    def front(self, *, before_round: int | None = None) -> list[Point]:
        return pareto_front(self.points(before_round=before_round))

    # ---------------------------------------------------------------------------------------- pairs

    def pairs(self, candidate: Candidate, *, near_misses: bool) -> list[Pair]:
        """Tasks full context solved and this candidate did not, with their provenance diffs; with `near_misses`,
        also those it solved only by recalling what it had cut."""
        key = (candidate.version, near_misses)
        if key in self._pairs:
            return self._pairs[key]
        evaluation = self.evaluate(candidate, "train", self.train, "train", self.options.screen_agent)
        tasks = {t.id: t for t in self.train}
        found = find_pairs(self.none_train.episodes, evaluation.episodes, near_misses=near_misses)
        self._pairs[key] = [
            Pair(full, compressed, diff_pair(full, compressed, tasks.get(full.task_id)), tasks.get(full.task_id))
            for full, compressed in found
        ]
        return self._pairs[key]

    # ------------------------------------------------------------------------------------- tier 1

    def agent_budget_left(self, episodes: int) -> bool:
        """Whether `episodes` more tier-1 episodes fit the job's budget (stored ones are not run again)."""
        return accounting.search_agent_episodes(self.dir.path) + episodes <= self.options.budget.max_agent_episodes

    def repeats(self, strategy: ContextStrategy, tasks: Sequence[Task], split: str) -> Repeats:
        """`strategy` run by the real agent on `tasks`, `tier1_repeats` times (stored runs are read back)."""
        selection = self.options.selection
        evaluations = self.evaluator.repeated(
            strategy, tasks, split, "llm", selection.tier1_repeats, selection.tier1_temperature
        )
        return Repeats(tuple(evaluations))

    def tier1_pairs(self, candidate: Candidate, limit: int) -> list[Pair]:
        """Pairs from the real agent on the first `limit` train tasks: full context passes on most seeds,
        the candidate fails on most, each with its behavioural cause. Empty when the budget is spent."""
        key = (candidate.version, limit)
        if key in self._tier1_pairs:
            return self._tier1_pairs[key]
        # Spread over families: the first train tasks of a generated suite are all of its first family.
        tasks = spread(self.train)[:limit]
        if not tasks:
            return []
        runs = len(tasks) * self.options.selection.tier1_repeats
        # Full context's runs are shared by every round; only the candidate's are new after the first. The
        # confirmation's episodes stay reserved: mining every round must not leave the choice to tier 0.
        if not self.agent_budget_left(runs + self.options.confirmation_episodes()):
            self.log(
                f"tier-1 mining budget spent ({self.options.confirmation_episodes()} episodes kept for the "
                f"confirmation); {candidate.guideline.name}@{candidate.version} mined at tier 0 only"
            )
            self._tier1_pairs[key] = []
            return []
        full = self.repeats(parse_strategy("none"), tasks, "train")
        compressed = self.repeats(screened(candidate.guideline), tasks, "train")
        pairs = majority_pairs(full, compressed, tasks)
        causes = ", ".join(sorted({p.diff.cause or "" for p in pairs})) or "none"
        self.log(
            f"tier 1: {candidate.guideline.name}@{candidate.version} passes {compressed.pass_rate():.2f} of "
            f"{runs} episodes (full context {full.pass_rate():.2f}); {len(pairs)} pair(s), causes: {causes}"
        )
        self._tier1_pairs[key] = pairs
        return pairs

    def successes(self, candidate: Candidate) -> list[Episode]:
        evaluation = self.evaluate(candidate, "train", self.train, "train", self.options.screen_agent)
        return compressed_successes(self.none_train.episodes, evaluation.episodes)
