"""Learned summary instructions against the target's own default, the seed text and no compression.

    python benchmarks/bench_summary_instructions.py [--config experiments/builtin.toml] [--target langchain]
        [--trigger 1500] [--keep 4] [--learn 6] [--split val|test] [--limit N] [--candidates 2] [--rounds 1]
        [--paraphrases 0] [--sections] [--triggers T1,T2] [--max-peak P] [--default-triggers T1,T2] [--tier1 N]
        [--tier1-seeds S] [--confirm S] [--confirm-tasks 4] [--summarizer MODEL] [--frequency-penalty X]
        [--seed GUIDELINE] [--seed-only] [--summary-max-tokens N] [--temperature T] [--samples N] [--scripted]
        [--out benchmarks/results/summary_instructions_<suite>_<target>[_fp<X>][_<MODEL>][_pp<N>][_sections]
               [_t<T>][_x<N>][_cap<N>]_<split>.json]

Learning sees only the train split (taken in turns from each task family): its first `--learn` tasks, the
first three quarters to mine lost facts and the last quarter to choose on. The figure is on `--split`: `val`
(train tasks the search did not use, for method work) or `test`, which is written once and never overwritten
(`--split test` refuses an existing file).
Rows, all on the same tasks with the same summarizer model: `none`, the target's `default` (read from the
installed package; Anthropic's is server-side, so its row is the stand-in with no instructions), the
`seed` text, `seed+contract` (the code-appended rules alone), the search's start when it is another layout
(`optimizer.summary.layouts`; with the contract: what the LLM lines must beat), `learned`, and the
deterministic strategies of `--baselines` (default: the oracle, which keeps each needed unit until its last use and
runs at tier 0 only, and acon's shipped built-in guideline, which calls no model): a summary must beat what no
summarizer at all achieves.
Per row: facts kept per summary (screen), tier-0 success (reference agent), summary tokens, mean peak;
paired bootstrap intervals of learned minus each other row, per task. `--tier1 N` also runs
the real agent (the config's `[endpoints.agent]`, `--tier1-seeds` sampling seeds at temperature 0.3) on N of the figure
tasks, taken in turns from each family, for the rows in `--tier1-rows` (`none` and the summaries by default; never the
oracle, which reads the reference solution): success, mean
peak and the same paired intervals at tier 1. Its episodes are stored under `--runs` and read back on a
re-run (an interrupted run resumes there). `--confirm S` puts the real agent in the search: a child the
screen would take must also pass at least as many episodes as its parent on `--confirm-tasks` train tasks x S
seeds, chosen among the train tasks neither mined nor in the figure as those full context solves on every seed.
`--triggers` lets the trigger be chosen beside the text (`optimizer.summary.knobs`): the learned text is judged at
`--trigger` and at each of them (tier 1 on the confirmation tasks with `--confirm`, else tier 0 on the choice
tasks), the rows run at the winner, and `learned@T` / `default@T` rows show both texts at the user's `--trigger`.
`--default-triggers T1,T2` adds `default@T` rows, the default text at other triggers: a text that keeps more facts
writes longer summaries, so beside the default at the same trigger it also runs at a higher peak; the report names
the default row that peaks least while at least as high as the learned text (`equal_peak`, per tier) and the
success gap there, which is what the learned text buys that peak cannot.
`--paraphrases N` also has the optimizer say N sentences of the best text otherwise per round
(`optimizer.summary.paraphrase`); a paraphrase child goes on only with a paired gain on train above chance.
`--sections` also asks, per round, for a section of the layout for a kind of fact lost that no section names
(`optimizer.summary.sections`), gated like a UT child.
`--seed-only` starts the search from the seed alone, as before the written layouts (results up to that change);
a `--seed` of one's own always does.
`--temperature T --samples N` has the summarizer draw N summaries of each history, one per sampling seed, in the
search's screens and in every figure row (a task's facts and tier-0 successes pooled over its draws, so the pairs
stay one per task): at temperature 0 a one-word rewording moved the 0.5B summarizer's count by a third and, sampled,
not at all (`benchmarks/README.md`, "Sampled, the rewording's effect is gone on these tasks").
`--summary-max-tokens N` caps every summary row's completion alike (a cap cuts a summary's end; a sentence asking
for brevity did not shorten the 1.5B model's summaries). `--scripted` swaps every model for a deterministic stand-in to
check the plumbing: its numbers say nothing about any model and are labelled so.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from optimizer import _offline  # noqa: E402,F401
from optimizer.agent.episode import Episode  # noqa: E402
from optimizer.agent.loop import EpisodeServices, run_episode  # noqa: E402
from optimizer.config import ExperimentConfig, load_experiment  # noqa: E402
from optimizer.context.compressor import Compressor  # noqa: E402
from optimizer.context.guideline import SEED_GUIDELINE, guideline_at  # noqa: E402
from optimizer.context.strategies import ContextStrategy, parse_strategy  # noqa: E402
from optimizer.context.thresholds import SUMMARY_MAX_TOKENS  # noqa: E402
from optimizer.errors import AconError  # noqa: E402
from optimizer.evaluate.endpoints import ModelEndpoints  # noqa: E402
from optimizer.evaluate.failure_causes import causes_said  # noqa: E402
from optimizer.evaluate.runner import AgentSpec  # noqa: E402
from optimizer.evaluate.scores import Scores  # noqa: E402
from optimizer.evaluate.strategy_runs import select_tasks, strategy_named  # noqa: E402
from optimizer.interrupts import run_main  # noqa: E402
from optimizer.llm.cache import ResponseCache  # noqa: E402
from optimizer.llm.client import ChatClient  # noqa: E402
from optimizer.llm.endpoint import EndpointConfig  # noqa: E402
from optimizer.search.evaluator import Evaluator  # noqa: E402
from optimizer.search.summary_job import confirm_at_tier1, judge_at_tier1, solved_at_tier1  # noqa: E402
from optimizer.search.task_order import spread  # noqa: E402
from optimizer.stats import paired_bootstrap_diff, said_gap, wilson_interval  # noqa: E402
from optimizer.summary.anthropic_target import AnthropicCompaction  # noqa: E402
from optimizer.summary.call import CachedOptimizer  # noqa: E402
from optimizer.summary.contract_text import with_contract  # noqa: E402
from optimizer.summary.defaults import TargetDefault, target_default  # noqa: E402
from optimizer.summary.knobs import (  # noqa: E402
    DEFAULT_PEAK,
    Judged,
    PeakGoal,
    TriggerChoice,
    choose_trigger,
    equal_peak,
    equal_peak_said,
)
from optimizer.summary.langchain_target import LangChainSummary  # noqa: E402
from optimizer.summary.layouts import starts_for  # noqa: E402
from optimizer.summary.restated import restating_count  # noqa: E402
from optimizer.summary.rewrite import OptimizerLM  # noqa: E402
from optimizer.summary.screen import ScreenResult, screen  # noqa: E402
from optimizer.summary.search import SearchRecord, learn  # noqa: E402
from optimizer.summary.target_base import SummaryTarget  # noqa: E402
from optimizer.world.task import Task  # noqa: E402


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@contextlib.contextmanager
def episode_lines(label: str, total: int) -> Iterator[Callable[[Episode], None]]:
    """One line per tier-1 episode as it ends: with the 0.5B summarizer one episode takes up to 7 minutes, and a row
    of them printed nothing for half an hour. Episodes read back from a stored run print at once (0 s)."""
    started = time.perf_counter()
    done = solved = 0

    def advance(episode: Episode) -> None:
        nonlocal done, solved
        done, solved = done + 1, solved + int(episode.success)
        outcome = "solved" if episode.success else "failed"
        _log(
            f"    {label}: {done} of {total}, {solved} solved ({episode.task_id} {outcome}, peak "
            f"{episode.metrics.peak_tokens:,}; {time.perf_counter() - started:,.0f} s)"
        )

    yield advance


def make_target(kind: str, trigger: int, keep: int, max_tokens: int = SUMMARY_MAX_TOKENS):
    def make(text: str | None) -> SummaryTarget:
        if kind == "langchain":
            return LangChainSummary(
                trigger_tokens=trigger, keep_messages=keep, instructions=text, max_tokens=max_tokens
            )
        return AnthropicCompaction(trigger_tokens=trigger, instructions=text, max_tokens=max_tokens)

    return make


def _peak_goal(value: str) -> PeakGoal:
    if value == DEFAULT_PEAK:
        return DEFAULT_PEAK
    if not value.isdigit() or int(value) <= 0:
        raise argparse.ArgumentTypeError(f"{value!r} is neither a positive token count nor {DEFAULT_PEAK!r}")
    return int(value)


def figure_tasks(
    config: ExperimentConfig, split: str, train_all: Sequence[Task], learned_on: int, limit: int
) -> list[Task]:
    """The figure's tasks: on `val`, the train tasks after the `learned_on` the search used; on `test`, the test
    split. Both in family turns: the split in file order is one family after another, and its first ten tasks
    held two of the four families."""
    if split == "val":
        return list(train_all[learned_on : learned_on + limit])
    return spread(select_tasks(config, "test", None))[:limit]


def tier0(strategy: ContextStrategy, tasks: Sequence[Task], compressor: Compressor | None) -> list[Episode]:
    agent = AgentSpec("reference")
    out = []
    for task in tasks:
        episode = run_episode(task, agent.build(task, None), strategy, EpisodeServices(compressor=compressor))
        if episode.outcome == "infra_error":
            raise SystemExit(f"bench_summary_instructions: infrastructure error on {task.id}: {episode.error}")
        out.append(episode)
    return out


TIER1_SEED = 1
TIER1_TEMPERATURE = 0.3


def tier1(
    evaluator: Evaluator, strategy: ContextStrategy, tasks: Sequence[Task], split: str, seeds: int = 1
) -> dict[str, Any]:
    """The real agent on `tasks` under `strategy`, one sample per sampling seed `TIER1_SEED`.. (stored, so a re-run
    reads it back). `tier1_by_task` is each task's success share over its seeds: the paired intervals resample
    tasks, not episodes, since two seeds of one task are not independent evidence."""
    runs = [
        evaluator.evaluate(strategy, tasks, split, "llm", seed=seed, temperature=TIER1_TEMPERATURE)
        for seed in range(TIER1_SEED, TIER1_SEED + seeds)
    ]
    scored = Scores.pooled([run.scores for run in runs])
    if not scored.n:
        raise SystemExit("bench_summary_instructions: no tier-1 episode was scored (infrastructure errors)")
    return {
        "tier1_success": scored.success,
        "tier1_success_ci": wilson_interval(sum(t.success for t in scored.tasks), scored.n),
        "tier1_episodes": scored.n,
        "tier1_peak_mean": scored.peak_mean,
        "tier1_by_task": scored.success_by_task(),
        "tier1_failures": scored.failure_causes(),
        **restating("tier1", [episode for run in runs for episode in run.episodes]),
    }


def restating(tier: str, episodes: Iterable[Episode]) -> dict[str, int]:
    """How many of the summaries the episodes' summarizer wrote were the task statement again with no result: the
    summary the 1.5B agent started over from on five validation tasks, and which facts kept counts only as losses."""
    written, restating = restating_count(episodes)
    return {f"{tier}_summaries": written, f"{tier}_restating": restating}


def tier0_draws(strategy: ContextStrategy, tasks: Sequence[Task], compressors: Sequence[Compressor]) -> list[Episode]:
    """`tier0` once per summarizer draw (one compressor per sampling seed), tasks in order within each draw."""
    return [episode for compressor in compressors for episode in tier0(strategy, tasks, compressor)]


def success_by_task(episodes: Sequence[Episode]) -> list[float]:
    """Each task's tier-0 success share over its draws, in task order: the unit a paired interval resamples."""
    return list(Scores.of(episodes, {}).success_by_task().values())


def row(episodes: Sequence[Episode], screened: ScreenResult | None) -> dict[str, Any]:
    passes = sum(e.success for e in episodes)
    out: dict[str, Any] = {
        "tier0_success": passes / len(episodes),
        "tier0_success_ci": wilson_interval(passes, len(episodes)),
        "peak_mean": statistics.mean(e.metrics.peak_tokens for e in episodes),
        "failures": {e.task_id: e.reasons[:2] for e in episodes if not e.success},
    }
    if screened is not None:
        per_summary = [s.kept / s.needed for s in screened.summaries if s.needed]
        out |= {
            "summaries": len(screened.summaries),
            "facts_needed": screened.needed,
            "facts_kept": screened.kept,
            "facts_kept_share": screened.kept_share,
            "facts_kept_per_summary": statistics.mean(per_summary) if per_summary else None,
            "summary_tokens_mean": screened.summary_tokens,
            "summaries_looped": screened.looped,
            "summaries_claiming": screened.claimed,
            "summaries_inventing": screened.inventing,
            "summaries_restating": screened.restating,
            "summaries_back_to_back": screened.back_to_back,
            "lost_by_kind": screened.lost_by_kind,
        }
    return out


def per_task_kept(screened: ScreenResult) -> list[float]:
    return list(screened.kept_by_task().values())


def paired(a: list[float], b: list[float]) -> dict[str, float]:
    mean, low, high = paired_bootstrap_diff(a, b)
    return {"mean": mean, "low": low, "high": high}


def scripted_responder(request: dict) -> str:
    """A stand-in for both roles: summaries keep the lines of the kinds the instructions name."""
    prompt = str(request["messages"][-1]["content"])
    if "Its summaries lost the kind of information" in prompt:
        return "Keep every identifier and amount the later steps use, exactly as written.\nBe brief."
    if "Rewrite the summary instructions" in prompt:
        return "Keep each value."
    if prompt.endswith("Three versions:"):  # a paraphrase: the sentence asked about, one word changed
        sentence = prompt.split('<data source="sentence">', 1)[-1].split("</data>", 1)[0].strip()
        return sentence.replace("every", "each", 1) if "every" in sentence else f"Always: {sentence}"
    instructions, _, history = prompt.partition("<messages>")
    keys = [("identifier", ("id", "ID-", "#")), ("rules verbatim", ("RULE", "rule")), ("error", ("rror",))]
    lines = [line.strip() for line in history.splitlines() if line.strip()]
    keep = [line for word, marks in keys if word in instructions for line in lines if any(m in line for m in marks)]
    return "Summary of the conversation.\n" + "\n".join(dict.fromkeys(keep))[:1500]


def _reworded(attempt: dict) -> str:
    if attempt["llm_lines"]:
        return f'"{attempt["llm_lines"][0]}"'
    return "refused (" + "; ".join(f'"{r["line"]}": {r["reason"]}' for r in attempt["refused"]) + ")"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=ROOT / "experiments" / "builtin.toml")
    parser.add_argument("--target", choices=("langchain", "anthropic"), default="langchain")
    parser.add_argument("--trigger", type=int, default=1500)
    parser.add_argument("--keep", type=int, default=4, help="LangChain keep=('messages', N).")
    parser.add_argument("--learn", type=int, default=6, help="Train tasks the search uses.")
    parser.add_argument("--split", choices=("val", "test"), default="val")
    parser.add_argument("--limit", type=int, default=6, help="Tasks in the figure.")
    parser.add_argument("--candidates", type=int, default=2, help="UT proposals per round.")
    parser.add_argument("--rounds", type=int, default=1, help="Rounds of UT proposals, each followed by a CO step.")
    parser.add_argument(
        "--paraphrases",
        type=int,
        default=0,
        help="Sentences of the best text the optimizer says otherwise per round (optimizer.summary.paraphrase).",
    )
    parser.add_argument(
        "--sections",
        action="store_true",
        help="Also ask the optimizer for a section of the layout, per round (optimizer.summary.sections).",
    )
    parser.add_argument(
        "--confirm",
        type=int,
        default=0,
        help="Seeds of the real agent on the confirmation tasks that a child must not do worse on than its "
        "parent (0: the screen alone decides).",
    )
    parser.add_argument(
        "--confirm-tasks",
        type=int,
        default=4,
        help="Confirmation tasks: the first this many train tasks outside mining and the figure (the choice tasks "
        "first) that full context solves at tier 1 on every seed.",
    )
    parser.add_argument(
        "--triggers",
        default="",
        help="Other triggers the learned text may be run at (comma-separated): each is judged with it (tier 1 on "
        "the confirmation tasks with --confirm, else tier 0 on the choice tasks) and the rows run at the winner, "
        "with the learned and default texts at --trigger beside them.",
    )
    parser.add_argument(
        "--max-peak",
        type=_peak_goal,
        default=None,
        help="With --triggers: a trigger whose trials' mean peak (server tokens) is above this is not chosen "
        "('default': the default text's own mean peak at --trigger, judged alike).",
    )
    parser.add_argument(
        "--default-triggers",
        default="",
        help="Triggers the default text also runs at (comma-separated), each a `default@T` row: where one peaks "
        "at least as high as the learned text, the report compares the two at equal peak.",
    )
    parser.add_argument("--tier1", type=int, default=0, help="Figure tasks the real agent also runs (0: none).")
    parser.add_argument(
        "--tier1-seeds", type=int, default=1, help="Sampling seeds of the real agent per tier-1 task (default 1)."
    )
    parser.add_argument("--runs", type=Path, default=None, help="Where tier-1 episodes are stored.")
    parser.add_argument(
        "--tier1-rows", default="none,default,seed,seed+contract,learned", help="Rows the real agent runs."
    )
    parser.add_argument(
        "--seed",
        type=Path,
        default=None,
        help="A guideline file whose history text the search starts from (default: acon's seed guideline).",
    )
    parser.add_argument(
        "--seed-only", action="store_true", help="Start the search from the seed alone, without the written layouts."
    )
    _add_summarizer_arguments(parser)
    parser.add_argument(
        "--baselines",
        default="oracle,guidelines/learned/builtin.md",
        help="Deterministic rows beside the summaries: strategy names or guideline files ('' for none).",
    )
    parser.add_argument("--scripted", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    return parser


def _add_summarizer_arguments(parser: argparse.ArgumentParser) -> None:
    """What the summarizer is and how it samples: each a different method, named in the output file."""
    parser.add_argument("--summarizer", default=None, help="the summarizer model (default: the config's compressor)")
    parser.add_argument(
        "--frequency-penalty",
        type=float,
        default=None,
        help="the summarizer's frequency penalty (default: the config's)",
    )
    parser.add_argument(
        "--summary-max-tokens",
        type=int,
        default=SUMMARY_MAX_TOKENS,
        help=f"Completion cap of every summary, every row alike (default {SUMMARY_MAX_TOKENS}): a bound the "
        "summarizer cannot ignore, where a sentence asking for brevity was (benchmarks/probe_summary_layout.py).",
    )
    parser.add_argument(
        "--temperature", type=float, default=None, help="the summarizer's temperature (default: the config's)"
    )
    parser.add_argument(
        "--samples",
        type=int,
        default=1,
        metavar="N",
        help="Summaries of each history, one per sampling seed 1..N, in every screen and every tier-0 row (a task's "
        "facts and successes pooled over its draws): at temperature 0 a text's count is one decoding path.",
    )


@dataclass
class Plan:
    """What one run of the benchmark measures, settled from its arguments before any model starts."""

    args: argparse.Namespace
    config: ExperimentConfig
    mine: list[Task]  # the train tasks whose lost facts the optimizer is shown
    choose: list[Task]  # the train tasks a child is chosen on
    figure: list[Task]
    confirm_pool: list[Task]
    tier1_tasks: list[Task]
    tier1_rows: set[str]
    triggers: list[int]
    default_triggers: list[int]
    seed_text: str
    default: TargetDefault
    baselines: dict[str, ContextStrategy]
    runs: Path
    out: Path
    # Filled by the search when it confirms at tier 1: the train tasks full context solves on every seed.
    confirm_on: list[Task] = field(default_factory=list)

    def at(self, trigger: int) -> Callable[[str | None], SummaryTarget]:
        return make_target(self.args.target, trigger, self.args.keep, self.args.summary_max_tokens)

    @property
    def make(self) -> Callable[[str | None], SummaryTarget]:
        return self.at(self.args.trigger)

    @property
    def tier1_split(self) -> str:
        return "test" if self.args.split == "test" else "train"


def _out_path(args: argparse.Namespace, suite: str) -> Path:
    if args.out:
        return args.out
    # A summarizer setting is a different method: its figures never overwrite, nor stand in for, the plain ones.
    penalised = f"_fp{args.frequency_penalty:g}" if args.frequency_penalty else ""
    penalised += f"_{args.summarizer}" if args.summarizer else ""
    penalised += f"_seed-{args.seed.stem}" if args.seed else ""
    penalised += "_seed-only" if args.seed_only else ""
    penalised += f"_pp{args.paraphrases}" if args.paraphrases else ""
    penalised += "_sections" if args.sections else ""
    penalised += f"_t{args.temperature:g}" if args.temperature is not None else ""
    penalised += f"_x{args.samples}" if args.samples != 1 else ""
    penalised += f"_cap{args.summary_max_tokens}" if args.summary_max_tokens != SUMMARY_MAX_TOKENS else ""
    scripted = "_scripted" if args.scripted else ""
    return (
        ROOT
        / "benchmarks"
        / "results"
        / f"summary_instructions_{suite}_{args.target}{penalised}_{args.split}{scripted}.json"
    )


def _refuse_bad_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace, out: Path) -> None:
    if args.split == "test" and out.exists():
        parser.error(f"{out} exists: the test figure is produced once")
    if args.summary_max_tokens <= 0:
        parser.error("--summary-max-tokens must be positive")
    if args.tier1 and not {"none", "learned"} <= set(args.tier1_rows.split(",")):
        parser.error("--tier1-rows must include none and learned (the paired comparisons are against them)")
    if args.paraphrases < 0:
        parser.error("--paraphrases must be 0 or more")
    if args.samples < 1:
        parser.error("--samples must be at least 1")
    if args.tier1_seeds < 1:
        parser.error("--tier1-seeds must be at least 1")
    if (args.tier1 or args.confirm) and args.scripted:
        parser.error("--tier1 and --confirm run the real agent; --scripted has none")


def plan_from(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Plan:
    config = load_experiment(args.config).with_overrides(tracking={"enabled": False})
    if args.frequency_penalty is not None:
        config = config.with_overrides(endpoints={"compressor": {"frequency_penalty": args.frequency_penalty}})
    if args.summarizer is not None:
        config = config.with_overrides(endpoints={"compressor": {"model": args.summarizer}})
    if args.temperature is not None:
        config = config.with_overrides(endpoints={"compressor": {"temperature": args.temperature}})
    if args.samples > 1 and config.endpoints.compressor.temperature == 0.0:
        parser.error("--samples above 1 needs a summarizer temperature above 0 (--temperature): at 0 every draw is one")
    # In turns from each task family: a suite listed family by family would otherwise learn on one family and
    # report on another.
    train_all = spread(select_tasks(config, "train", None))
    learn_tasks = train_all[: args.learn]
    # The last quarter, not every fourth: in family turns, every fourth task is always the same family, and the
    # choice would be made on one family alone.
    held = max(1, len(learn_tasks) // 4) if len(learn_tasks) > 1 else 0
    mine = learn_tasks[: len(learn_tasks) - held]
    choose = learn_tasks[len(learn_tasks) - held :] or mine[-1:]
    figure = figure_tasks(config, args.split, train_all, args.learn, args.limit)
    suite = config.suite.type
    out = _out_path(args, suite)
    _refuse_bad_arguments(parser, args, out)
    if not figure:
        parser.error("no tasks for the figure")
    try:
        seed_text = guideline_at(args.seed or SEED_GUIDELINE).texts.history
    except AconError as error:
        parser.error(f"--seed: {' '.join(str(error).split())[:200]}")
    try:
        baselines = {name: strategy_named(config, name) for name in args.baselines.split(",") if name}
    except (AconError, OSError, ValueError) as error:
        parser.error(f"--baselines: {' '.join(str(error).split())[:200]}")
    return Plan(
        args=args,
        config=config,
        mine=mine,
        choose=choose,
        figure=figure,
        # The real agent confirms on train tasks neither mined nor in a validation figure, the choice tasks
        # first, and only on those full context solves (the first confirmation, on tasks it failed, could not
        # tell texts apart).
        confirm_pool=choose + train_all[args.learn + (args.limit if args.split == "val" else 0) :],
        tier1_tasks=spread(figure)[: args.tier1],
        tier1_rows=set(args.tier1_rows.split(",")),
        triggers=_trigger_list(parser, "--triggers", args.triggers),
        default_triggers=_trigger_list(parser, "--default-triggers", args.default_triggers),
        seed_text=seed_text,
        default=target_default(args.target),
        baselines=baselines,
        runs=args.runs or ROOT / "benchmarks" / "results" / f"runs_summary_{suite}_{args.target}_{args.split}",
        out=out,
    )


def choose_trigger_for(
    plan: Plan, text: str, compressors: Sequence[Compressor], evaluator: Evaluator | None
) -> TriggerChoice:
    if evaluator is not None and plan.confirm_on:
        judge = judge_at_tier1(evaluator, plan.confirm_on, "train", plan.args.confirm, TIER1_TEMPERATURE)
        judged_by = f"the real agent on {len(plan.confirm_on)} confirmation task(s) x {plan.args.confirm} seed(s)"
    else:

        def judge(strategy: ContextStrategy) -> Judged:
            episodes = tier0_draws(strategy, plan.choose, compressors)
            return Judged.of([e.success for e in episodes], [e.metrics.peak_tokens for e in episodes])

        judged_by = f"tier 0 on the {len(plan.choose)} choice task(s)"
    choice = choose_trigger(
        lambda trigger: plan.at(trigger)(text),
        plan.args.trigger,
        plan.triggers,
        judge,
        judged_by,
        _log,
        plan.args.max_peak,
        lambda trigger: plan.at(trigger)(plan.default.text),
    )
    _log(choice.describe())
    return choice


def learn_text(
    plan: Plan, compressors: Sequence[Compressor], lm: OptimizerLM, evaluator: Evaluator | None
) -> SearchRecord:
    confirm = None
    if evaluator is not None and plan.args.confirm:
        seeds = plan.args.confirm
        plan.confirm_on[:] = solved_at_tier1(
            evaluator, plan.confirm_pool, "train", seeds, TIER1_TEMPERATURE, plan.args.confirm_tasks
        )
        if not plan.confirm_on:
            raise SystemExit(
                f"--confirm: full context solves none of {len(plan.confirm_pool)} train tasks on every seed at tier 1"
            )
        _log(f"tier 1 confirms on {len(plan.confirm_on)} train task(s) full context solves on every seed")
        confirm = confirm_at_tier1(evaluator, plan.make, plan.confirm_on, "train", seeds, TIER1_TEMPERATURE)
    return learn(
        plan.make,
        plan.seed_text,
        plan.mine,
        plan.choose,
        compressors,
        lm,
        rounds=plan.args.rounds,
        candidates=plan.args.candidates,
        paraphrases=plan.args.paraphrases,
        sections=plan.args.sections,
        confirm=confirm,
        starts={} if plan.args.seed_only else starts_for(plan.seed_text),
        log=_log,
    )


def strategies_for(
    plan: Plan, texts: dict[str, str | None], choice: TriggerChoice | None
) -> dict[str, ContextStrategy]:
    """Every row: `none`, each text at the chosen trigger (the asked one without a choice), both texts at the asked
    trigger when another was chosen, the default at each `--default-triggers`, and the deterministic baselines."""
    asked = plan.args.trigger
    rows_at = choice.chosen if choice is not None else asked
    strategies: dict[str, ContextStrategy] = {
        "none": parse_strategy("none"),
        **{name: plan.at(rows_at)(text) for name, text in texts.items()},
    }
    if rows_at != asked:  # the text against the default where it was learned
        strategies |= {f"{name}@{asked}": plan.make(texts[name]) for name in ("learned", "default")}
    strategies |= {
        f"default@{t}": plan.at(t)(plan.default.text)
        for t in plan.default_triggers
        if t != rows_at and f"default@{t}" not in strategies  # the `default` row ran at `rows_at` already
    }
    return strategies | plan.baselines


@dataclass
class Measured:
    rows: dict[str, Any] = field(default_factory=dict)
    kept: dict[str, list[float]] = field(default_factory=dict)  # per task, the rows that summarize
    success: dict[str, list[float]] = field(default_factory=dict)  # per task, tier 0


def measure(
    plan: Plan,
    strategies: dict[str, ContextStrategy],
    texts: dict[str, str | None],
    compressors: Sequence[Compressor],
    evaluator: Evaluator | None,
) -> Measured:
    measured = Measured()
    for name, strategy in strategies.items():
        base = name.split("@")[0]  # `learned@2000` is the learned text at the asked trigger
        screened = screen(strategy, plan.figure, compressors) if base in texts else None
        episodes = tier0_draws(strategy, plan.figure, compressors[:1] if name == "none" else compressors)
        row_of = row(episodes, screened)
        if evaluator is not None and plan.tier1_tasks and base in plan.tier1_rows and strategy.kind != "oracle":
            row_of |= tier1(evaluator, strategy, plan.tier1_tasks, plan.tier1_split, plan.args.tier1_seeds)
        measured.rows[name] = row_of
        measured.success[name] = success_by_task(episodes)
        if screened is not None:
            measured.kept[name] = per_task_kept(screened)
        _log(f"  {name}: {json.dumps({k: v for k, v in row_of.items() if k != 'failures'}, default=str)}")
    return measured


def paired_rows(measured: Measured, names: Sequence[str]) -> dict[str, Any]:
    """Learned minus each other row, per task: facts kept and tier-0 success, and tier-1 success where both ran."""
    rows, kept, success = measured.rows, measured.kept, measured.success
    compared = [name for name in names if name not in ("none", "learned")]
    pairs: dict[str, Any] = {
        f"learned-{base}": {
            **({"facts_kept": paired(kept["learned"], kept[base])} if base in kept else {}),
            "tier0_success": paired(success["learned"], success[base]),
        }
        for base in compared
    }
    if "tier1_by_task" in rows["none"]:
        by_task = {name: r["tier1_by_task"] for name, r in rows.items() if "tier1_by_task" in r}
        ids = list(by_task["none"])
        for base in [b for b in (*compared, "none") if b in by_task]:
            pairs.setdefault(f"learned-{base}", {})["tier1_success"] = paired(
                [float(by_task["learned"][i]) for i in ids], [float(by_task[base][i]) for i in ids]
            )
    return pairs


def texts_of(plan: Plan, record: SearchRecord) -> dict[str, str | None]:
    """The summary rows' texts: the default, the seed, the seed with the contract, the learned text, and the start the
    search went on from when it is another layout and the optimizer's lines changed it (what those lines must beat;
    when none survived, the learned text is the start and the report says so instead of repeating the row)."""
    texts: dict[str, str | None] = {
        "default": plan.default.text,
        "seed": plan.seed_text,
        "seed+contract": with_contract(plan.seed_text),
        "learned": record.best().text,
    }
    start = record.named(record.start).text
    if record.start != "seed+contract" and start != texts["learned"]:
        texts[record.start] = start
    return texts


def run_with(
    plan: Plan, compressors: Sequence[Compressor], lm: OptimizerLM, model: str, evaluator: Evaluator | None = None
) -> dict[str, Any]:
    _log(f"learning on {len(plan.mine)} + {len(plan.choose)} train tasks ({model})")
    record = learn_text(plan, compressors, lm, evaluator)
    best = record.best()
    texts = texts_of(plan, record)
    choice = choose_trigger_for(plan, best.text, compressors, evaluator) if plan.triggers else None
    strategies = strategies_for(plan, texts, choice)
    measured = measure(plan, strategies, texts, compressors, evaluator)
    return {
        "model": model,
        "trigger_choice": choice.to_dict() | {"described": choice.describe()} if choice is not None else None,
        "rows": measured.rows,
        "equal_peak": {tier: equal_peak_default(measured.rows, tier) for tier in ("tier0", "tier1")},
        "paired": paired_rows(measured, list(strategies)),
        "texts": texts,
        "search": record.to_dict(),
    }


def run_scripted(plan: Plan) -> dict[str, Any]:
    """Every model swapped for `scripted_responder` behind the stub server: the plumbing, not a figure."""
    from optimizer.testing.stub_server import StubServer

    with StubServer(scripted_responder) as url:
        summarizer = plan.config.endpoints.compressor
        endpoint = EndpointConfig(
            base_url=url,
            model="scripted",
            max_retries=0,
            frequency_penalty=summarizer.frequency_penalty,
            temperature=summarizer.temperature,
        )
        client = ChatClient(endpoint, base_url=url, model="scripted")
        cache = ResponseCache(Path(tempfile.mkdtemp()) / "c.sqlite")
        seeds = range(1, plan.args.samples + 1) if plan.args.samples > 1 else [None]
        compressors = [
            Compressor(ChatClient(endpoint.model_copy(update={"seed": s}), base_url=url, model="scripted"), cache)
            for s in seeds
        ]
        return run_with(plan, compressors, CachedOptimizer(client, cache, 200), "scripted")


def run_on_models(plan: Plan) -> dict[str, Any]:
    endpoints_config = plan.config.endpoints
    roles = {"compressor": endpoints_config.compressor, "optimizer": endpoints_config.optimizer}
    if plan.tier1_tasks or plan.args.confirm:
        roles["agent"] = endpoints_config.agent
    with ModelEndpoints(roles, log=_log) as endpoints:
        summarizer = endpoints_config.compressor
        penalty = f" (frequency penalty {summarizer.frequency_penalty})" if summarizer.frequency_penalty else ""
        if plan.args.samples > 1:
            penalty += f" ({plan.args.samples} draws per history at temperature {summarizer.temperature:g})"
        described = f"{summarizer.model} summarizer{penalty}, {endpoints_config.optimizer.model} optimizer"
        if plan.tier1_tasks:
            described += f", {endpoints_config.agent.model} agent at tier 1"
        evaluator = None
        if plan.tier1_tasks or plan.args.confirm:
            evaluator = Evaluator(plan.config, endpoints, plan.runs, progress=episode_lines)
        return run_with(
            plan,
            endpoints.compressors(plan.args.samples),
            # Cached by prompt and temperature, as the job's: a re-run after an interruption replays the same
            # rewrites (the same candidates) instead of drawing new ones.
            CachedOptimizer(endpoints.client("optimizer"), endpoints.response_cache(), 300),
            described,
            evaluator,
        )


def report_of(plan: Plan, result: dict[str, Any], seconds: float) -> dict[str, Any]:
    args, compressor = plan.args, plan.config.endpoints.compressor
    tasks: dict[str, Any] = {
        "mine": [t.id for t in plan.mine],
        "choose": [t.id for t in plan.choose],
        "confirm": [t.id for t in plan.confirm_on],
        "figure": len(plan.figure),
    }
    rows = result["rows"]
    if args.split == "test":
        rows = sealed(rows, [t.id for t in plan.figure])
    else:
        tasks["figure_ids"] = [t.id for t in plan.figure]
    tier1_run = {
        "tasks": len(plan.tier1_tasks),
        "seed": TIER1_SEED,
        "seeds": args.tier1_seeds,
        "temperature": TIER1_TEMPERATURE,
        "runs": str(plan.runs),
    }
    return {
        "benchmark": "summary_instructions",
        "scripted": args.scripted,
        "suite": plan.config.suite.type,
        "target": args.target,
        # The knobs the rows ran at (`learned@T` / `default@T` rows ran at the asked trigger T).
        "knobs": {
            "trigger": (result["trigger_choice"] or {}).get("chosen", args.trigger),
            "keep": args.keep,
            "summary_max_tokens": args.summary_max_tokens,
        },
        "search_budget": {
            "rounds": args.rounds,
            "candidates": args.candidates,
            "confirm_seeds": args.confirm,
            "confirm_tasks": args.confirm_tasks,
        },
        "summarizer": compressor.model,
        "summarizer_sampling": {"temperature": compressor.temperature, "samples": args.samples} | compressor.sampling(),
        "default_source": plan.default.source,
        "default_note": plan.default.note,
        "seed_file": str(args.seed) if args.seed else "acon's seed guideline (seed.md)",
        "split": args.split,
        "tasks": tasks,
        "tier1": tier1_run if plan.tier1_tasks else "not run",
        "seconds": round(seconds, 1),
        "machine": platform.machine(),
        **result,
        "rows": rows,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    plan = plan_from(parser, parser.parse_args(argv))
    started = time.perf_counter()
    result = run_scripted(plan) if plan.args.scripted else run_on_models(plan)
    report = report_of(plan, result, time.perf_counter() - started)
    plan.out.parent.mkdir(parents=True, exist_ok=True)
    plan.out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    plan.out.with_suffix(".md").write_text(table(report) + "\n")
    print(table(report))
    return 0


def sealed(rows: dict[str, Any], figure_ids: Sequence[str]) -> dict[str, Any]:
    """`rows` with each test task named by its place in the figure: ids of the sealed split are never written
    (a file that names them invites reading them), and the places still pair every row's tasks."""
    place = {task_id: f"task {n}" for n, task_id in enumerate(figure_ids, 1)}
    out = {}
    for name, r in rows.items():
        r = dict(r)
        for key in ("failures", "tier1_by_task"):
            if key in r:
                r[key] = {place[task_id]: value for task_id, value in r[key].items()}
        out[name] = r
    return out


def _trigger_list(parser: argparse.ArgumentParser, flag: str, value: str) -> list[int]:
    try:
        triggers = [int(t) for t in value.split(",") if t]
    except ValueError:
        parser.error(f"{flag}: whole numbers separated by commas, not {value!r}")
    if any(t <= 0 for t in triggers):
        parser.error(f"{flag}: every trigger must be positive")
    return triggers


def equal_peak_default(rows: dict[str, Any], tier: str) -> str | None:
    """The default-text row (`default` or `default@T`) at equal peak with the learned text at `tier`
    (`optimizer.summary.knobs.equal_peak`); None also when `tier` did not run."""
    peak = "peak_mean" if tier == "tier0" else "tier1_peak_mean"
    if peak not in rows.get("learned", {}):
        return None
    defaults = {name: r[peak] for name, r in rows.items() if name.split("@")[0] == "default" and peak in r}
    return equal_peak(defaults, rows["learned"][peak])


def equal_peak_lines(report: dict[str, Any]) -> list[str]:
    lines = []
    for tier, label in (("tier0", "tier 0"), ("tier1", "tier 1")):
        if tier == "tier1" and "tier1_peak_mean" not in report["rows"].get("learned", {}):
            continue
        name = (report.get("equal_peak") or {}).get(tier)
        success, peak = (f"{tier}_success", "peak_mean" if tier == "tier0" else "tier1_peak_mean")
        learned, other = report["rows"]["learned"], report["rows"].get(name or "")
        gap = report["paired"].get(f"learned-{name}", {}).get(success)
        said = equal_peak_said(
            (learned[success], learned[peak]), name, (other[success], other[peak]) if other else None, gap
        )
        lines.append(f"at equal peak ({label}): {said}")
    return lines


def table(report: dict[str, Any]) -> str:
    with_tier1 = isinstance(report["tier1"], dict)
    columns = [
        "row",
        "facts kept",
        "per summary",
        "looping summaries",
        "false claims",
        "invented values",
        "tier-0 success",
        "summary tokens",
        "mean peak",
    ]
    if with_tier1:
        seeds = report["tier1"].get("seeds", 1)
        episodes = f"{report['tier1']['tasks']} tasks" + (f" x {seeds} seeds" if seeds > 1 else "")
        columns += [f"tier-1 success ({episodes})", "tier-1 mean peak"]
    head = (
        f"summary instructions, {report['suite']} suite, {report['target']} target, split {report['split']}, "
        f"model: {report['model']}{' (SCRIPTED: not a model)' if report['scripted'] else ''}\n\n"
        f"| {' | '.join(columns)} |\n|{'---|' * len(columns)}"
    )
    lines = [head]
    for name, r in report["rows"].items():
        kept = f"{r['facts_kept']}/{r['facts_needed']}" if "facts_kept" in r else "-"
        per = f"{r['facts_kept_per_summary']:.2f}" if r.get("facts_kept_per_summary") is not None else "-"
        tokens = f"{r['summary_tokens_mean']:.0f}" if "summary_tokens_mean" in r else "-"
        looping = f"{r['summaries_looped']} of {r['summaries']}" if "summaries_looped" in r else "-"
        claiming = f"{r['summaries_claiming']} of {r['summaries']}" if "summaries_claiming" in r else "-"
        inventing = f"{r['summaries_inventing']} of {r['summaries']}" if "summaries_inventing" in r else "-"
        cells = [
            name,
            kept,
            per,
            looping,
            claiming,
            inventing,
            f"{r['tier0_success']:.2f}",
            tokens,
            f"{r['peak_mean']:.0f}",
        ]
        if with_tier1:
            cells += (
                [f"{r['tier1_success']:.2f}", f"{r['tier1_peak_mean']:.0f}"] if "tier1_success" in r else ["-", "-"]
            )
        lines.append(f"| {' | '.join(cells)} |")
    lines.append("")
    if report.get("trigger_choice"):
        lines.append(f"{report['trigger_choice']['described']}\n")
    search = report.get("search")
    if search:
        chosen = next(c for c in search["candidates"] if c["name"] == search["chosen"])
        written = "; ".join(f'"{line}"' for line in chosen["llm_lines"]) or "none"
        lines.append(f"learned = {chosen['name']}; the optimizer's lines in it: {written}\n")
        said = [a for a in search["attempts"] if a.get("replaces")]  # older reports have no paraphrases
        if said:
            lines.append("sentences the optimizer said otherwise:")
            lines += [f'  {a["candidate"]}: "{a["replaces"]}" -> {_reworded(a)}: {a["verdict"]}' for a in said]
            lines.append("")
    failing = {name: r["tier1_failures"] for name, r in report["rows"].items() if "tier1_failures" in r}
    if failing:  # reports from before the causes were counted have none
        lines.append("failed tier-1 episodes showing each cause (an episode may show several):")
        lines += [f"  {name}: {causes_said(counts)}" for name, counts in failing.items()]
        lines.append("")
    if "equal_peak" in report:  # reports from before the default@T rows have no such comparison
        lines += [*equal_peak_lines(report), ""]
    labels = {"facts_kept": "facts kept", "tier0_success": "tier-0 success", "tier1_success": "tier-1 success"}
    for name, p in report["paired"].items():
        parts = [f"{labels[k]} {said_gap(v)}" for k, v in p.items()]
        lines.append(f"{name}: {', '.join(parts)}")
    return "\n".join(lines)


if __name__ == "__main__":
    run_main(main, "bench_summary_instructions")
