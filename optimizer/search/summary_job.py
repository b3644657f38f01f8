"""`acon optimize` with `[optimize.target]`: learn a production summarizer's instruction text.

    learn    the seed guideline's history text or a written layout of its sections (`optimizer.summary.layouts`),
             whichever keeps more on train, with the retention contract appended by code, then ACON's
             UT rewrites from the facts its summaries lost on the mined train tasks and a CO shortening,
             each candidate screened (what its summaries keep) and chosen on the validation tasks
             (`optimizer.summary.search`)
    knobs    with `trigger_choices`, the trigger the learned text does best at (`optimizer.summary.knobs`);
             every row of the report and the artifact use it
    report   on the test split, the same summarizer under every text: the learned one, the target's own
             default (read from the installed package), the seed, the seed with the contract, and `none`:
             facts kept per summary, tier-0 success and mean peak (tier 1 on `final_llm_limit` of them,
             spread over task families)
    artifact the learned text as a guideline file with its provenance, and `target.json`, from which
             `acon export --format langchain|anthropic` writes the target's own settings

Every model call is cached by its exact request (summaries and the optimizer's rewrites alike) and every
evaluation is a keyed run directory, so a resumed or repeated job replays what it did without a new call.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from optimizer.context.compressor import Compressor
from optimizer.context.guideline import read_guideline, save_guideline
from optimizer.context.strategies import GuidelineStrategy, parse_strategy
from optimizer.context.strategies.base import ContextStrategy
from optimizer.errors import ConfigError
from optimizer.evaluate.endpoints import ModelEndpoints
from optimizer.evaluate.scores import Scores, TaskScore
from optimizer.evaluate.strategy_runs import select_tasks
from optimizer.report.summary import SummaryReport, TextRow
from optimizer.search.evaluator import Evaluator, Progress
from optimizer.search.job import split_validation
from optimizer.search.state import JobDir
from optimizer.search.task_order import spread
from optimizer.summary.call import CachedOptimizer
from optimizer.summary.contract_text import with_contract
from optimizer.summary.export import target_guideline
from optimizer.summary.knobs import Judge, Judged, TriggerChoice, choose_trigger
from optimizer.summary.layouts import starts_for
from optimizer.summary.screen import screen
from optimizer.summary.search import Confirm, MakeTarget, SearchRecord, learn
from optimizer.world.task import Task

if TYPE_CHECKING:
    from optimizer.config import ExperimentConfig
    from optimizer.summary.targets import TargetConfig

Log = Callable[[str], None]
CHECKPOINT = "summary_search.json"
TARGET_FILE = "target.json"


class SummaryJob:
    def __init__(
        self, config: ExperimentConfig, *, resume: bool = False, log: Log = print, progress: Progress | None = None
    ) -> None:
        if config.optimize.target is None:
            raise ValueError("SummaryJob needs [optimize.target]")
        self.config = config
        self.options = config.optimize
        self.target: TargetConfig = config.optimize.target
        mined, held = split_validation(
            select_tasks(config, "train", self.options.train_limit), self.options.val_fraction, config.seed
        )
        # Without validation tasks the choice is made on the mined ones, and the report says so.
        self.train, self.val, self.chosen_on = mined, held or mined, "val" if held else "train"
        self.test = select_tasks(config, "test", self.options.test_limit)
        self.seed_text = read_guideline(config.guideline).history
        self.deterministic = self._deterministic(self.options.report.deterministic_guideline)
        self.default = self.target.default()
        self.dir = JobDir(config.out_dir)
        self.dir.claim(config, resume=resume, started_by=CHECKPOINT)
        self.log = log
        self.progress = progress
        self.confirm_on: list[Task] = []  # the confirmation tasks, once the real agent has picked them

    def run(self) -> SummaryReport:
        started = time.monotonic()
        roles = {"compressor": self.config.endpoints.compressor, "optimizer": self.config.endpoints.optimizer}
        if self.options.report.final_llm_limit > 0 or self.options.screen_agent == "llm" or self.target.confirm_seeds:
            roles["agent"] = self.config.endpoints.agent
        notes: list[str] = []
        with ModelEndpoints(roles, log=self.log) as endpoints:
            cache = endpoints.response_cache()
            compressors = endpoints.compressors(self.target.screen_samples)
            client = endpoints.client("optimizer")
            optimizer = CachedOptimizer(client, cache, client.config.max_tokens)
            self.log(
                f"{self.target.type} target: learning on {len(self.train)} train tasks, choosing on "
                f"{len(self.val)} {self.chosen_on} tasks"
            )
            evaluator = Evaluator(self.config, endpoints, self.dir.path / "runs", progress=self.progress)
            record = learn(
                self.target.strategy,
                self.seed_text,
                self.train,
                self.val,
                compressors,
                optimizer,
                rounds=self.options.budget.rounds,
                candidates=self.target.proposals,
                paraphrases=self.target.paraphrases,
                sections=self.target.sections,
                minibatch=self.target.minibatch,
                seed=self.config.seed,
                confirm=self._confirmer(evaluator),
                starts=starts_for(self.seed_text),
                log=self.log,
            )
            # Written before the trigger trials: their tier-1 episodes take long, and the file marks the job as started.
            self.dir.write_json(CHECKPOINT, record.to_dict())
            best = record.best()
            self.log(f"chosen: {best.name} ({len(best.llm_lines)} optimizer line(s) in it)")
            trigger = self._choose_trigger(evaluator, best.text)
            if trigger is not None:
                self.dir.write_json(CHECKPOINT, record.to_dict() | {"trigger": trigger.to_dict()})
            texts: dict[str, str | None] = {
                "learned": best.text,
                "default": None,
                "seed": self.seed_text,
                "seed+contract": with_contract(self.seed_text),
            }
            if record.start != "seed+contract":  # what the optimizer's lines must beat
                texts[record.start] = record.named(record.start).text
            rows = [self._row(name, text, compressors, evaluator) for name, text in texts.items()]
            rows += self._default_rows(trigger, compressors, evaluator)
            if self.deterministic is not None:
                version = self.deterministic.version()
                rows.append(self._baseline_row("deterministic", self.deterministic, evaluator, version))
            rows.append(self._baseline_row("none", parse_strategy("none"), evaluator, None))
        artifact = self._write_artifact(record, rows[0])
        report = SummaryReport(
            experiment=self.config.name,
            suite=self.config.suite.type,
            target=self.target.type,
            knobs=self.target.knobs(),
            default_source=self.default.source,
            default_note=self.default.note,
            tasks={
                "train": len(self.train),
                "val": len(self.val) if self.chosen_on == "val" else 0,
                "test": len(self.test),
            },
            chosen_on=self.chosen_on,
            rows=tuple(rows),
            search=record,
            artifact=str(artifact),
            optimizer={"calls": optimizer.calls, "cache_hits": optimizer.cache_hits, "tokens": optimizer.tokens},
            notes=tuple(notes),
            trigger=trigger,
        )
        self.dir.write_json("report.json", {**report.to_dict(), "wall_s": round(time.monotonic() - started, 1)})
        self.dir.write_text("report.md", report.markdown())
        return report

    def _confirmer(self, evaluator: Evaluator) -> Confirm | None:
        seeds = self.target.confirm_seeds
        if not seeds:
            return None
        temperature = self.options.selection.tier1_temperature
        tasks = solved_at_tier1(evaluator, self.val, "val", seeds, temperature, self.target.confirm_tasks)
        if not tasks:
            raise ConfigError(
                f"confirm_seeds: full context solves none of the {len(self.val)} validation tasks at tier 1 on every "
                "seed, so a confirmation there could not tell a rewrite from its parent"
            )
        self.log(f"tier 1 confirms on the {len(tasks)} validation task(s) full context solves on every seed")
        self.confirm_on = tasks
        return confirm_at_tier1(evaluator, self.target.strategy, tasks, "val", seeds, temperature)

    def _choose_trigger(self, evaluator: Evaluator, text: str) -> TriggerChoice | None:
        """With `trigger_choices`: the trigger the learned text does best at (`optimizer.summary.knobs`), which every
        row of the report and the artifact then use."""
        target = self.target
        if not target.trigger_choices:
            return None
        if self.confirm_on:
            seeds = target.confirm_seeds
            temperature = self.options.selection.tier1_temperature
            judge = judge_at_tier1(evaluator, self.confirm_on, "val", seeds, temperature)
            judged_by = f"the real agent on {len(self.confirm_on)} validation task(s) x {seeds} seed(s)"
        else:
            judge = judge_at_tier0(evaluator, self.val, "val", self.options.screen_agent)
            judged_by = f"tier 0 ({self.options.screen_agent} agent) on {len(self.val)} {self.chosen_on} task(s)"
        asked = target.strategy(text).trigger()
        choice = choose_trigger(
            lambda t: target.at_trigger(t).strategy(text),
            asked,
            target.trigger_choices,
            judge,
            judged_by,
            self.log,
            target.max_peak_tokens,
            lambda t: target.at_trigger(t).strategy(None),
        )
        self.log(choice.describe())
        self.target = target.at_trigger(choice.chosen)
        return choice

    def _default_rows(
        self, trigger: TriggerChoice | None, compressors: Sequence[Compressor], evaluator: Evaluator
    ) -> list[TextRow]:
        """The default text at the triggers other than the learned text's: the user's own when the job chose
        another (their summarizer as it ships), then `default_triggers`, for the comparison at equal peak."""
        others = [trigger.asked] if trigger is not None and trigger.chosen != trigger.asked else []
        others += self.options.target.default_triggers if self.options.target is not None else ()
        learned_at = getattr(self.target, "trigger_tokens", None)  # the `default` row ran there already
        return [
            self._row(f"default@{t}", None, compressors, evaluator, self.target.at_trigger(t))
            for t in dict.fromkeys(others)
            if t != learned_at
        ]

    def _row(
        self,
        name: str,
        text: str | None,
        compressors: Sequence[Compressor],
        evaluator: Evaluator,
        target: TargetConfig | None = None,
    ) -> TextRow:
        strategy = (target or self.target).strategy(text)
        self.log(f"test split: {name} ({strategy.label()})")
        screened = screen(strategy, self.test, compressors)
        tier0, tier1 = self._tiers(evaluator, strategy)
        texts = strategy.texts()
        version = texts.version if texts is not None else None
        return TextRow(name, text if text is not None else self.default.text, version, screened, tier0, tier1)

    def _baseline_row(self, name: str, strategy: ContextStrategy, evaluator: Evaluator, version: str | None) -> TextRow:
        """A strategy that never summarizes (`none`, a deterministic guideline): no text, no summaries to screen."""
        self.log(f"test split: {name} ({strategy.label()})")
        tier0, tier1 = self._tiers(evaluator, strategy)
        return TextRow(name, None, version, None, tier0, tier1)

    def _tiers(self, evaluator: Evaluator, strategy: ContextStrategy) -> tuple[Scores, Scores | None]:
        tier0 = self._scores(evaluator, strategy, self.test, self.options.screen_agent)
        tier1 = None
        report = self.options.report
        if report.final_llm_limit > 0:
            subset = spread(self.test)[: report.final_llm_limit]
            tier1 = evaluator.pooled(strategy, subset, "test", "llm", report.final_llm_seeds)
        return tier0, tier1

    @staticmethod
    def _deterministic(path: str | None) -> ContextStrategy | None:
        """The deterministic guideline's strategy, refused in one line if one of its moves calls a model."""
        if path is None:
            return None
        strategy = GuidelineStrategy(guideline=read_guideline(path))
        if strategy.uses_compressor:
            raise ConfigError(f"deterministic_guideline {path}: a move of it calls the compressor model")
        return strategy

    @staticmethod
    def _scores(evaluator: Evaluator, strategy: ContextStrategy, tasks: list[Task], agent: str) -> Scores:
        return evaluator.evaluate(strategy, tasks, "test", agent).scores

    def _write_artifact(self, record: SearchRecord, learned: TextRow) -> Path:
        """The learned text as a guideline file with its provenance, and what `acon export` rebuilds it from."""
        best = record.best()
        strategy = self.target.strategy(best.text)
        summarizer = self.config.endpoints.compressor
        provenance = {
            "job": str(self.dir.path),
            "experiment": self.config.name,
            "target": self.target.type,
            "knobs": self.target.knobs(),
            # The text was learned for this summarizer and its sampling (a penalty set on it is the user's to set too).
            "summarizer": {"model": summarizer.model, "temperature": summarizer.temperature, **summarizer.sampling()},
            "candidate": best.name,
            "parent": best.parent,
            "llm_lines": list(best.llm_lines),
            "chosen_on": self.chosen_on,
            "test": learned.to_dict() | {"text": None},
        }
        guideline = target_guideline(strategy, provenance)
        path = self.dir.path / "guidelines" / f"{guideline.version}.md"
        save_guideline(guideline, path)
        self.dir.write_json(
            TARGET_FILE,
            {
                "target": self.target.model_dump(mode="json"),
                "text": best.text,
                "guideline": str(path.relative_to(self.dir.path)),
                "version": guideline.version,
            },
        )
        return path


def judge_at_tier1(evaluator: Evaluator, tasks: Sequence[Task], split: str, seeds: int, temperature: float) -> Judge:
    """A strategy -> the real agent's success share and mean peak on `tasks` over sampling seeds 1..`seeds` (stored,
    so read back)."""

    def judge(strategy: ContextStrategy) -> Judged:
        runs = [
            evaluator.evaluate(strategy, tasks, split, "llm", seed=seed, temperature=temperature).scores
            for seed in range(1, seeds + 1)
        ]
        return _judged([t for r in runs for t in r.tasks])

    return judge


def judge_at_tier0(evaluator: Evaluator, tasks: Sequence[Task], split: str, agent: str) -> Judge:
    """A strategy -> the screening agent's success share and mean peak on `tasks`."""

    def judge(strategy: ContextStrategy) -> Judged:
        return _judged(list(evaluator.evaluate(strategy, list(tasks), split, agent).scores.tasks))

    return judge


def _judged(scores: Sequence[TaskScore]) -> Judged:
    if not scores:
        raise ConfigError("no episode was scored (every one hit an infrastructure error)")
    return Judged.of([t.success for t in scores], [t.peak_tokens for t in scores])


def confirm_at_tier1(
    evaluator: Evaluator, make: MakeTarget, tasks: Sequence[Task], split: str, seeds: int, temperature: float
) -> Confirm:
    """A text -> the real agent's success share on `tasks` over sampling seeds 1..`seeds` (stored, so read back)."""
    judge = judge_at_tier1(evaluator, tasks, split, seeds, temperature)
    return lambda text: judge(make(text)).success


def solved_at_tier1(
    evaluator: Evaluator, tasks: Sequence[Task], split: str, seeds: int, temperature: float, want: int | None = None
) -> list[Task]:
    """The first `want` of `tasks` (all, when None) the real agent solves with full context on every seed 1..`seeds`.

    A confirmation tells a child from its parent only on tasks the agent can solve: on the first one's two
    validation tasks the parent passed 0 of 4 episodes, and no child could do worse. Tasks are tried a batch at a
    time (at least two, so both server slots work), each batch's episodes stored like any other run."""
    full_context = parse_strategy("none")
    want = len(tasks) if want is None else want
    solved: list[Task] = []
    start = 0
    while len(solved) < want and start < len(tasks):
        batch = list(tasks[start : start + max(2, want - len(solved))])
        start += len(batch)
        passed = {task.id: True for task in batch}
        for seed in range(1, seeds + 1):
            scores = evaluator.evaluate(full_context, batch, split, "llm", seed=seed, temperature=temperature).scores
            for score in scores.tasks:
                passed[score.task_id] = passed[score.task_id] and score.success
        solved += [task for task in batch if passed[task.id]]
    return solved[:want]
