"""`acon optimize`: warm start, search, selection on validation, and the test-split report.

    warm start  `none` on the train tasks; every baseline translated into a guideline and the seed, screened
                (model-free ones on every train task, the seed on the LLM subset first)
    search      `acon` (rounds of proposers) or `gepa` (the seed's texts), on the same evaluator
    selection   the train front and the best few, evaluated on the validation tasks; the best there is
                chosen (never a candidate picked on the tasks it was mined from), then optionally
                confirmed with the llm agent (tier 1)
    report      the chosen guideline, the seed, `none`, every baseline and the oracle on the test split

Every evaluation is a resumable run directory and the state is checkpointed after each step, so a killed
job resumes where it stopped without redoing or duplicating work.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from optimizer.context.guideline import Guideline, read_guideline
from optimizer.context.strategies import GuidelineStrategy, parse_strategy
from optimizer.context.strategies.base import ContextStrategy
from optimizer.evaluate.endpoints import ModelEndpoints
from optimizer.evaluate.scores import Scores
from optimizer.evaluate.strategy_runs import RunResult, is_guideline_file, select_tasks, strategy_named
from optimizer.report.file import write_report
from optimizer.report.front import Point
from optimizer.report.markdown import report_markdown
from optimizer.report.model import (
    ChosenGuideline,
    Confirmation,
    ConfirmedCandidate,
    Deterministic,
    Figures,
    Report,
    ReportRound,
    ShortlistEntry,
)
from optimizer.search import accounting
from optimizer.search.candidate import (
    Candidate,
    distinct_moves,
    mildest_within,
    move_signature,
    other_move_sets,
    screened,
)
from optimizer.search.evaluator import Evaluator, Progress
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
    Subscriber,
    rejections,
)
from optimizer.search.lineage import llm_free, parts
from optimizer.search.proposers.llm import OptimizerLM
from optimizer.search.report import ReportInputs, Row, build_report
from optimizer.search.searches import SearchContext
from optimizer.search.state import JobDir, SearchState
from optimizer.search.task_order import across_families, spread
from optimizer.search.validate import ToolOutputIndex
from optimizer.world.task import Task

if TYPE_CHECKING:
    from optimizer.config import ExperimentConfig

Log = Callable[[str], None]


def split_validation(tasks: Sequence[Task], fraction: float, seed: int) -> tuple[list[Task], list[Task]]:
    """Train tasks into (mined, validation) by a seeded hash, so adding tasks never reshuffles the others."""
    if fraction <= 0 or len(tasks) < 2:
        return list(tasks), []
    ordered = sorted(tasks, key=lambda t: hashlib.sha256(f"val:{seed}:{t.id}".encode()).hexdigest())
    cut = max(1, min(len(tasks) - 1, round(len(tasks) * fraction)))
    held = {t.id for t in ordered[:cut]}
    return [t for t in tasks if t.id not in held], [t for t in tasks if t.id in held]


# How a candidate the real agent rejected on the confirmation tasks is marked (`Candidate.rejected`).
TIER1_REJECTION = "tier-1 success"


def tier1_rejection(candidate: Candidate) -> str | None:
    """Why tier 1 rejected `candidate`, or None (kept, never confirmed, or rejected for another reason)."""
    reason = candidate.rejected
    return reason if reason is not None and reason.startswith(TIER1_REJECTION) else None


class OptimizationJob:
    def __init__(
        self, config: ExperimentConfig, *, resume: bool = False, log: Log = print, progress: Progress | None = None
    ) -> None:
        self.config = config
        self.options = config.optimize
        self.search = self.options.chosen_search()
        # Everything a new job can be refused for is checked before its directory is claimed.
        self.train, self.val = split_validation(
            select_tasks(config, "train", self.options.train_limit), self.options.val_fraction, config.seed
        )
        self.test = select_tasks(config, "test", self.options.test_limit)
        self._seed = self._listed(read_guideline(config.guideline))
        for name in (*self.options.warm_start, *self.options.report.final_strategies):
            strategy_named(config, name)  # an unknown baseline name fails here, not after the search
        self.dir = JobDir(config.out_dir)
        self.state = self.dir.claim(config, resume=resume) or SearchState()
        self.log = log
        self.progress = progress
        self._subscriber: Subscriber | None = None
        # What of the job's progress (0: the seed's screen, else a round) this process has published.
        self._published: set[int] = set()
        self.ctx: SearchContext | None = None
        self.none_val: Scores | None = None
        self._wall_base = self.state.wall_s
        self._started: float | None = None

    # ------------------------------------------------------------------------------------- running

    def run(self, track: Callable[[], contextlib.AbstractContextManager[Subscriber | None]] | None = None) -> Report:
        """Run (or resume) the job. `track()`: the subscriber to its events (tracking), opened once every endpoint
        answers; it hears every event of this run, a resumed job's done steps again included."""
        self._started, self._wall_base = time.monotonic(), self.state.wall_s
        roles = {"compressor": self.config.endpoints.compressor}
        if self.search.uses_optimizer:
            roles["optimizer"] = self.config.endpoints.optimizer
        if self._tier1_enabled() or self.options.screen_agent == "llm" or self.options.report.final_llm_limit > 0:
            roles["agent"] = self.config.endpoints.agent
        with (
            ModelEndpoints(roles, log=self.log) as endpoints,
            track() if track is not None else contextlib.nullcontext() as subscriber,
        ):
            self._subscriber = subscriber
            evaluator = Evaluator(
                self.config, endpoints, self.dir.path / "runs", progress=self.progress, on_run=self._on_run
            )
            agent = self.options.screen_agent
            none_train = evaluator.evaluate(parse_strategy("none"), self.train, "train", agent)
            outputs = ToolOutputIndex(
                e.text(entry.raw) for e in none_train.episodes for entry in e.entries if entry.kind == "result"
            )
            llm = OptimizerLM(endpoints.client("optimizer"), seed=self.config.seed) if "optimizer" in roles else None
            ctx = SearchContext(
                self.config,
                evaluator,
                self.state,
                self.dir,
                self.train,
                none_train,
                self.state.subset,
                outputs,
                self.log,
                self._save,
                llm=llm,
                publish=self._publish if subscriber is not None else None,
            )
            self.ctx = ctx
            self._warm_start(ctx)
            self.search.run(ctx)
            self._select(ctx, evaluator)
            return self._report(ctx, evaluator)

    def _warm_start(self, ctx: SearchContext) -> None:
        """The seed and every baseline as guidelines, screened before round 1 (round 0)."""
        seed = self._seed
        unpinned = seed.policy.unpinned_required()
        if unpinned and self.state.seed is None:
            names = ", ".join(c.value for c in unpinned)
            self.log(f"note: the seed leaves {names} unpinned; learned guidelines must pin it (contract)")
        for name in self.options.warm_start:
            ctx.screen(self._baseline(name))
        if not self.state.subset:
            self.state.subset = llm_subset(ctx, self.options.budget.llm_screen_limit)
            ctx.subset = self.state.subset
        self.state.seed = seed.version
        ctx.screen(Candidate(seed, "seed", 0))
        self._save()

    def _listed(self, guideline: Guideline) -> Guideline:
        """`guideline` with the job's recall listing, if it sets one (children inherit their parent's)."""
        listing = self.options.recall_tool
        if listing is None or guideline.policy.recall_tool == listing:
            return guideline
        return guideline.model_copy(update={"policy": guideline.policy.model_copy(update={"recall_tool": listing})})

    def _baseline(self, name: str) -> Candidate:
        strategy = strategy_named(self.config, name)
        # A guideline file starts the search as it is, its own name and texts kept (not the seed's).
        own = strategy.spec if isinstance(strategy, GuidelineStrategy) and is_guideline_file(name) else None
        guideline = self._listed(own or strategy.as_guideline(self._seed))
        if not strategy.uses_compressor:
            # No model-free move can touch a skill or a receipt, so pinning them changes nothing here and
            # lets every child pass the validator (which requires the pins).
            pinned = tuple(dict.fromkeys((*guideline.policy.pinned, *guideline.policy.unpinned_required())))
            guideline = guideline.model_copy(update={"policy": guideline.policy.model_copy(update={"pinned": pinned})})
        return Candidate(guideline, f"baseline:{name}", 0, rationale=f"the {name} baseline")

    def _select(self, ctx: SearchContext, evaluator: Evaluator) -> None:
        """Choose on the validation tasks among the train front and the best few (or on train without them)."""
        if self.state.chosen is not None:
            return
        agent = self.options.screen_agent
        front = {p.version for p in ctx.front()}
        ranked = ctx.ranked()
        shortlist = [c for c in ranked if c.version in front] + ranked[: self.options.selection.select_top]
        shortlist = list({c.version: c for c in shortlist}.values())
        if self._tier1_enabled():
            shortlist += other_move_sets(ranked, shortlist, self.options.selection.confirm_top)
            mildest = self._mildest(ctx, ranked, shortlist, "train", ctx.none_train.scores)
            if mildest is not None and mildest not in shortlist:
                shortlist.append(mildest)
        if self.val:
            none_val = evaluator.evaluate(parse_strategy("none"), self.val, "val", agent).scores
            self.none_val = none_val
            validated = []
            for candidate in shortlist:
                if candidate.uses_compressor and ctx.over_budget(len(self.val)):
                    self.log(f"{candidate.guideline.name}@{candidate.version}: compressor budget spent; not validated")
                    continue
                evaluation = ctx.evaluate(candidate, "val", self.val, "val", agent)
                candidate.screens["val"] = evaluation.scores
                validated.append(candidate)
            self.state.shortlist = [c.version for c in validated]
            # Chosen on validation; a candidate that broke a train task it was screened on is never preferred to
            # one that kept both (the filter can only make the choice more conservative, never fit it to val).
            order = sorted(validated, key=lambda c: self._selection_key(ctx, c, none_val), reverse=True)
        else:
            self.state.shortlist = [c.version for c in shortlist]
            order = shortlist
        chosen = self._confirmed(ctx, evaluator, order)
        self.state.chosen = chosen.version if chosen else self.state.seed
        self._save()
        picked = self.chosen()
        self.log(f"chosen: {picked.guideline.name}@{picked.version} ({picked.origin}, round {picked.round})")

    @staticmethod
    def _selection_key(
        ctx: SearchContext, candidate: Candidate, none_val: Scores
    ) -> tuple[bool, tuple[float, ...], tuple[float, ...]]:
        train = candidate.screens["train"]
        return (
            ctx.feasible(train, ctx.none_train.scores),
            ctx.key(candidate.screens["val"], none_val),
            ctx.key(train, ctx.none_train.scores),
        )

    def _confirmed(self, ctx: SearchContext, evaluator: Evaluator, order: Sequence[Candidate]) -> Candidate | None:
        """The best at tier 1 among the first `confirm_top` of `order` (when tier 1 is on and its budget allows).

        The real agent runs full context and each candidate on the first `confirm_limit` validation tasks (train
        tasks without them), `tier1_repeats` seeds each. A candidate whose tier-1 success falls below full
        context's by more than the tolerance is rejected; of the rest, the best by the job's objective at tier 1
        is chosen, so that tier 0 shortlists and the real agent decides."""
        if not self._tier1_enabled() or not order:
            return order[0] if order else None
        none = self._none_confirmed(ctx)
        tasks, split = self._confirm_tasks()
        runs = len(tasks) * self.options.selection.tier1_repeats
        confirmed: list[Candidate] = []
        # A guideline without moves is full context, which the real agent has just run.
        compressing = [c for c in order if move_signature(c)]
        own = self._to_confirm(ctx, compressing)
        for candidate in own + self._baselines_to_confirm(ctx, own):
            if "confirm" not in candidate.screens:
                if not ctx.agent_budget_left(runs):
                    self.log("tier-1 episode budget spent; remaining candidates stay unconfirmed")
                    break
                strategy = screened(candidate.guideline)
                candidate.screens["confirm"] = ctx.repeats(strategy, tasks, split).scores()
                self._save()
            scores = candidate.screens["confirm"]
            self.log(
                f"tier 1: {candidate.guideline.name}@{candidate.version} {scores.success:.2f} at peak "
                f"{scores.peak_mean:,.0f} (full context {none.success:.2f} at {none.peak_mean:,.0f})"
            )
            if not ctx.feasible(scores, none):
                candidate.rejected = f"{TIER1_REJECTION} {scores.success:.2f} vs none {none.success:.2f}"
                self._save()
                continue
            confirmed.append(candidate)
        if confirmed:
            self.state.tier1_verdict = "confirmed"
            return max(confirmed, key=lambda c: ctx.key(c.screens["confirm"], none))
        # Every guideline the real agent ran lost tasks that full context solved (or its budget ran out first), and
        # one it never ran is no safer: the honest recommendation is not to compress.
        rejected = any(tier1_rejection(c) for c in self.state.candidates.values())
        self.state.tier1_verdict = "rejected" if rejected else "unconfirmed"
        full = self._full_context(ctx)
        full.screens["confirm"] = none
        if rejected:
            self.log("tier 1 rejected every confirmed candidate (none kept full context's success); chosen: none")
        else:
            self.log("the tier-1 budget ran out before any candidate was confirmed; chosen: none")
        return full

    def _to_confirm(self, ctx: SearchContext, order: Sequence[Candidate]) -> list[Candidate]:
        """The candidates tier 1 confirms, in turn: the best of distinct move sets, the last of them replaced by
        the mildest cut within the peak goal when one is set (see `confirm_peak_goal`)."""
        picks = distinct_moves(order, self.options.selection.confirm_top)
        if len(picks) < 2:
            return picks
        screen, _, none = self._choice_screen(ctx)
        # Of a move set none of the others has, so never one of them.
        mildest = self._mildest(ctx, order, picks[:-1], screen, none)
        if mildest is None:
            return picks
        self.log(  # often the candidate `distinct_moves` gave: said either way, so a reader knows why it was asked
            f"tier 1 also asks about the mildest cut within the peak goal: {mildest.guideline.name}@{mildest.version}"
            f" (peak {mildest.screens[screen].peak_mean:,.0f})"
        )
        return [*picks[:-1], mildest]

    def _choice_screen(self, ctx: SearchContext) -> tuple[str, list[Task], Scores]:
        """The tier-0 screen the choice was made on (validation, or train without it), its tasks and full
        context's scores there: what the confirmations are picked by."""
        if self.val and self.none_val is not None:
            return "val", self.val, self.none_val
        return "train", self.train, ctx.none_train.scores

    def _baselines_to_confirm(self, ctx: SearchContext, have: Sequence[Candidate]) -> list[Candidate]:
        """The `confirm_baselines` warm-start baselines tier 1 also confirms: those that cut something and keep full
        context's success at tier 0 on the confirmation split, lowest peak first (what a user would pick from tier 0
        alone, and what the report's tier-1 rows put beside the choice)."""
        count = self.options.selection.confirm_baselines
        if count == 0:
            return []
        asked = {c.version for c in have}
        baselines = [
            c
            for c in self.state.candidates.values()
            if c.origin.startswith("baseline:") and move_signature(c) and c.version not in asked
        ]
        screen, tasks, none = self._choice_screen(ctx)
        for candidate in baselines:
            if screen not in candidate.screens:
                agent = self.options.screen_agent
                candidate.screens[screen] = ctx.evaluate(candidate, screen, tasks, screen, agent).scores
        # One that cuts nothing here is full context, which the real agent has already run.
        keeping = [
            c
            for c in baselines
            if ctx.feasible(c.screens[screen], none) and c.screens[screen].peak_mean < none.peak_mean
        ]
        picks = sorted(keeping, key=lambda c: c.screens[screen].peak_mean)[:count]
        for candidate in picks:
            self.log(
                f"tier 1 also asks about the baseline {candidate.origin.removeprefix('baseline:')} "
                f"(peak {candidate.screens[screen].peak_mean:,.0f})"
            )
        return picks

    def _mildest(
        self, ctx: SearchContext, order: Sequence[Candidate], have: Sequence[Candidate], screen: str, none: Scores
    ) -> Candidate | None:
        goal = self.options.selection.confirm_peak_goal
        if goal is None or self.options.selection.confirm_top < 2:
            return None
        return mildest_within(order, have, screen, goal * none.peak_mean, lambda s: ctx.feasible(s, none))

    def _confirm_tasks(self) -> tuple[list[Task], str]:
        """The tasks tier 1 confirms on, and their split: the first `confirm_limit` validation tasks (train without)."""
        if self.val:
            return spread(self.val)[: self.options.selection.confirm_limit], "val"
        return spread(self.train)[: self.options.selection.confirm_limit], "train"

    def _none_confirmed(self, ctx: SearchContext) -> Scores:
        if ctx.none_confirm is None:
            ctx.none_confirm = ctx.repeats(parse_strategy("none"), *self._confirm_tasks()).scores()
        return ctx.none_confirm

    def _confirmation(self, ctx: SearchContext) -> Confirmation | None:
        """What tier 1 said on validation, for the report (None when it confirmed nothing)."""
        tried = [c for c in self.state.candidates.values() if "confirm" in c.screens and move_signature(c)]
        if not tried and self.state.tier1_verdict is None:
            return None
        none = self._none_confirmed(ctx)
        tried.sort(key=lambda c: ctx.key(c.screens["confirm"], none), reverse=True)
        # A state written before the verdict was kept: a rejected choice means tier 1 rejected them all.
        verdict = self.state.tier1_verdict or ("rejected" if self.chosen().rejected else "confirmed")
        return Confirmation(
            verdict,
            Figures.of(none),
            tuple(
                ConfirmedCandidate(
                    ShortlistEntry(c.version, c.guideline.name, c.origin, Figures.of(c.screens["confirm"])),
                    tier1_rejection(c),
                )
                for c in tried
            ),
        )

    def _full_context(self, ctx: SearchContext) -> Candidate:
        """The `none` baseline as a candidate (the warm start's, when it screened one: same text, same version)."""
        return ctx.screen(self._baseline("none"))

    # -------------------------------------------------------------------------------------- report

    def _report(self, ctx: SearchContext, evaluator: Evaluator) -> Report:
        chosen, seed = self.chosen(), self.seed()
        self.log(f"final: test split ({len(self.test)} tasks), chosen {chosen.guideline.name}@{chosen.version}")
        rows, deterministic = self._test_rows(ctx, evaluator, chosen, seed)
        report = build_report(self._report_inputs(ctx, evaluator, chosen, rows, deterministic))
        write_report(self.dir.path / "report.json", report)
        self.dir.write_text("report.md", report_markdown(report))
        if self._subscriber is not None:
            self._publish_progress()
            rejected = rejections(self.candidates(), chosen.version)
            self._publish(CandidateChosen(CandidateRef.of(chosen), chosen.guideline, seed.guideline, rejected))
            self._publish(ReportBuilt(report, self.state.round, chosen.guideline))
        # The test rows are the job's time too (a tier-1 job's longest phase): without this save the state's
        # clock, which a resumed job and `bench_job_phases` read, stopped at the checkpoint before them.
        self._save()
        return report

    def _test_rows(
        self, ctx: SearchContext, evaluator: Evaluator, chosen: Candidate, seed: Candidate
    ) -> tuple[list[Row], Deterministic | None]:
        """The report's test rows, in the order they run (tier 0, the deterministic-only choice, the real
        agent), and what the deterministic-only choice scored."""
        rows, none_row = self._tier0_rows(evaluator, chosen, seed)
        deterministic = self._deterministic_choice(ctx, evaluator)
        det_row = None
        if deterministic is not None and deterministic.version != chosen.version:
            det_row = report_row(
                evaluator,
                "deterministic only",
                "deterministic",
                screened(deterministic.guideline),
                self.test,
                self.options.screen_agent,
                deterministic.version,
            )
            rows.append(det_row)
        rows += self._tier1_rows(ctx, evaluator, chosen, rows, none_row)
        if deterministic is None:
            return rows, None
        # The same guideline as the chosen one has no row of its own: it scored what the chosen one did.
        scores = det_row.scores if det_row is not None else rows[0].scores
        return rows, Deterministic(
            version=deterministic.version,
            name=deterministic.guideline.name,
            same_as_chosen=deterministic.version == chosen.version,
            figures=Figures.of(scores),
        )

    def _tier0_rows(self, evaluator: Evaluator, chosen: Candidate, seed: Candidate) -> tuple[list[Row], Row]:
        """The chosen guideline, the seed, full context and the configured baselines at tier 0 (full context's
        row also on its own: the seed's tasks and the tier-1 baselines are measured against it)."""
        tier0 = self.options.screen_agent
        none_row = report_row(evaluator, "none", "control", parse_strategy("none"), self.test, tier0)
        seed_tasks = self._seed_tasks(none_row)
        rows = [
            report_row(evaluator, "chosen", "learned", screened(chosen.guideline), self.test, tier0, chosen.version),
            report_row(evaluator, "seed", "seed", screened(seed.guideline), seed_tasks, tier0, seed.version),
            none_row,
        ]
        for name in dict.fromkeys(self.options.report.final_strategies):
            if name not in ("none", "seed", "guideline"):
                strategy = strategy_named(self.config, name)
                kind = "oracle" if strategy.kind == "oracle" else "baseline"
                rows.append(report_row(evaluator, name, kind, strategy, self.test, tier0))
        return rows, none_row

    def _seed_tasks(self, none_row: Row) -> Sequence[Task]:
        """The test tasks the seed runs on: all of them, or as many as `seed_test_limit` among those whose full
        context stays within the LLM subset's token budget."""
        limit = self.options.report.seed_test_limit
        if limit is None:
            return self.test
        affordable = affordable_tasks(none_row.scores, self.options.budget.llm_subset_max_tokens, limit)
        return [t for t in spread(self.test) if t.id in affordable][:limit]

    def _tier1_rows(
        self, ctx: SearchContext, evaluator: Evaluator, chosen: Candidate, tier0_rows: Sequence[Row], none_row: Row
    ) -> list[Row]:
        """The real agent on a spread subset of the test tasks: the chosen guideline, full context, and the
        baselines a user would pick from tier 0 alone."""
        if self.options.report.final_llm_limit <= 0:
            return []
        subset = spread(self.test)[: self.options.report.final_llm_limit]
        seeds = self.options.report.final_llm_seeds
        learned = screened(chosen.guideline)
        rows = [
            report_row(evaluator, "chosen", "learned", learned, subset, "llm", chosen.version, seeds),
            report_row(evaluator, "none", "control", parse_strategy("none"), subset, "llm", seeds=seeds),
        ]
        # Those baselines are the two with the lowest tier-0 peak that keep full context's success.
        for baseline in tier1_baselines(tier0_rows, none_row, ctx.tolerance):
            strategy = strategy_named(self.config, baseline.name)
            rows.append(report_row(evaluator, baseline.name, "baseline", strategy, subset, "llm", seeds=seeds))
        return rows

    def _report_inputs(
        self,
        ctx: SearchContext,
        evaluator: Evaluator,
        chosen: Candidate,
        rows: list[Row],
        deterministic: Deterministic | None,
    ) -> ReportInputs:
        """Everything the report is built from besides the test rows: the job's rounds, front, shortlist,
        spending and tier-1 confirmation."""
        return ReportInputs(
            experiment=self.config.name,
            suite=self.config.suite.type,
            tasks={"train": len(self.train), "val": len(self.val), "test": len(self.test)},
            chosen=ChosenGuideline(
                version=chosen.version,
                name=chosen.guideline.name,
                origin=chosen.origin,
                round=chosen.round,
                path=str(self.dir.path / "guidelines" / f"{chosen.version}.md"),
            ),
            rows=rows,
            acceptance=self.config.acceptance,
            tolerance=ctx.tolerance,
            rounds=[ReportRound(r, self._origins(r.screened)) for r in self.state.rounds],
            stopped=self.state.stopped or "",
            points=self.points(),
            front=self.front(),
            shortlist=self._none_val_row(evaluator) + [self._shortlisted(v) for v in self.state.shortlist],
            parts=parts(self.state.candidates, chosen.version),
            deterministic=deterministic,
            budget=accounting.spent(
                self.dir.path,
                optimizer_tokens=self.state.optimizer_tokens,
                candidates=sum(1 for c in self.state.candidates.values() if c.screens),
            ),
            infrastructure=accounting.infrastructure(self.dir.path),
            wall_s=self._wall_now(),
            mlflow=self._subscriber.where if self._subscriber is not None else {},
            confirmation=self._confirmation(ctx) if self._tier1_enabled() else None,
        )

    def _origins(self, versions: Sequence[str]) -> dict[str, int]:
        """How many of `versions` each proposer wrote, so a report never says "4 tightening" for 3 + 1 LLM."""
        counts: dict[str, int] = {}
        for version in versions:
            candidate = self.state.candidates.get(version)
            origin = candidate.origin if candidate is not None else "unknown"
            counts[origin] = counts.get(origin, 0) + 1
        return counts

    def _wall_now(self) -> float:
        return self._wall_base + (time.monotonic() - self._started if self._started is not None else 0.0)

    def _none_val_row(self, evaluator: Evaluator) -> list[ShortlistEntry]:
        if not self.val:
            return []
        none = evaluator.evaluate(parse_strategy("none"), self.val, "val", self.options.screen_agent).scores
        return [ShortlistEntry("none", "none", "control", Figures.of(none))]

    def _shortlisted(self, version: str) -> ShortlistEntry:
        candidate = self.state.candidates[version]
        scores = candidate.screens.get("val") or candidate.screens["train"]
        return ShortlistEntry(version, candidate.guideline.name, candidate.origin, Figures.of(scores))

    def _deterministic_choice(self, ctx: SearchContext, evaluator: Evaluator) -> Candidate | None:
        """The candidate selection would have chosen among those whose lineage has no LLM-written step."""

        def free(c: Candidate) -> bool:
            return not c.rejected and llm_free(self.state.candidates, c.version)

        validated = [c for v in self.state.shortlist if "val" in (c := self.state.candidates[v]).screens and free(c)]
        if validated:
            none_val = evaluator.evaluate(parse_strategy("none"), self.val, "val", self.options.screen_agent).scores
            return max(validated, key=lambda c: self._selection_key(ctx, c, none_val))
        return next((c for c in ctx.ranked() if free(c)), None)

    # ------------------------------------------------------------------------------------- helpers

    def _save(self) -> None:
        if self._started is not None:
            self.state.wall_s = self._wall_base + time.monotonic() - self._started
        self.dir.save_state(self.state)

    def _on_run(self, result: RunResult, agent: str, split: str, tasks: Sequence[Task]) -> None:
        if self._subscriber is None:
            return
        candidate = None
        if result.strategy.type == "guideline":
            known = self.state.candidates.get(result.strategy.version())
            candidate = CandidateRef.of(known) if known is not None else None
        self._publish(RunEvaluated(result, agent, split, candidate, tuple(tasks)))

    def _publish(self, event: JobEvent) -> None:
        """Hand `event` to the subscriber; after a candidate or a round's pairs, the progress it has not had."""
        if self._subscriber is None:
            return
        self._subscriber(event)
        if isinstance(event, CandidateScreened | RoundMined):
            self._publish_progress()

    def _publish_progress(self) -> None:
        """The seed's screen (step 0) once it has one, and every round closed since, each once per process.

        Published again by a resumed job (its subscriber may be a new one), from the checkpointed state."""
        if self._subscriber is None:
            return
        seed = self.state.candidates.get(self.state.seed or "")
        step0 = SeedScreened.of(seed) if seed is not None and 0 not in self._published else None
        if step0 is not None:
            self._published.add(0)
            self._subscriber(step0)
        for summary in self.state.rounds:
            if summary.round not in self._published:
                self._published.add(summary.round)
                self._subscriber(RoundClosed.of(summary, self.state, self.points()))

    def _tier1_enabled(self) -> bool:
        return (
            self.options.selection.confirm_top > 0
            and self.options.selection.confirm_limit > 0
            and self.options.budget.max_agent_episodes > 0
        )

    def candidates(self) -> list[Candidate]:
        return list(self.state.candidates.values())

    def chosen(self) -> Candidate:
        return self.state.candidates[self.state.chosen] if self.state.chosen else self.seed()

    def seed(self) -> Candidate:
        if self.state.seed is None:
            raise RuntimeError("the job has no seed candidate before its warm start")
        return self.state.candidates[self.state.seed]

    def points(self) -> list[Point]:
        return self.ctx.points() if self.ctx is not None else []

    def front(self) -> list[Point]:
        return self.ctx.front() if self.ctx is not None else []


def report_row(
    evaluator: Evaluator,
    name: str,
    kind: str,
    strategy: ContextStrategy,
    tasks: Sequence[Task],
    agent: str,
    version: str | None = None,
    seeds: int = 1,
) -> Row:
    """`strategy`'s row of the report: its scores on `tasks` of the test split, run by `agent` (`seeds` runs of
    it pooled, one per sampling seed, when more than one)."""
    return Row(name, kind, agent, evaluator.pooled(strategy, tasks, "test", agent, seeds), version)


def tier1_baselines(rows: Sequence[Row], none: Row, tolerance: float, count: int = 2) -> list[Row]:
    """The `count` tier-0 baseline rows with the lowest mean peak among those within the tolerance of `none`."""
    keeping = [
        r
        for r in rows
        if r.kind == "baseline" and r.tier == none.tier and r.scores.success >= none.scores.success - tolerance - 1e-9
    ]
    return sorted(keeping, key=lambda r: r.scores.peak_mean)[:count]


def llm_subset(ctx: SearchContext, limit: int) -> list[str]:
    """Train tasks where the cheaper moves lose facts or peak highest, among those whose full context is
    small enough for a compressor call to be affordable: where an LLM move could matter, at a bearable cost."""
    affordable = affordable_tasks(ctx.none_train.scores, ctx.options.budget.llm_subset_max_tokens, limit)
    best = ctx.best(model_free=True)
    if best is None or "train" not in best.screens:
        ordered_ids = [t.id for t in ctx.train if t.id in affordable]
    else:
        scores = [t for t in best.screens["train"].tasks if t.task_id in affordable]
        ordered_ids = [t.task_id for t in sorted(scores, key=lambda t: (t.success, -t.peak_tokens))]
    families = {t.id: t.meta.get("family") for t in ctx.train}
    return across_families(ordered_ids, families)[:limit]


def affordable_tasks(none: Scores, max_tokens: int, at_least: int = 0) -> set[str]:
    """Tasks whose full-context peak is at most `max_tokens`; the `at_least` smallest ones when too few are.

    Never empty when tasks exist: an empty subset would send an LLM candidate to the whole split, the
    most expensive screen there is, exactly when every task is large."""
    under = {t.task_id for t in none.tasks if t.peak_tokens <= max_tokens}
    if len(under) >= at_least:
        return under
    smallest = sorted(none.tasks, key=lambda t: t.peak_tokens)[:at_least]
    return under | {t.task_id for t in smallest}
