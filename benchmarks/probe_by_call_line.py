"""Shown lost facts in the ceiling's form, does the optimizer write a line that makes the summarizer keep more?

    python benchmarks/probe_by_call_line.py [--config experiments/summary_reach_long.toml] [--tasks 24] [--asks 2]
        [--model qwen2.5-coder-1.5b] [--start facts-by-call+contract] [--question by-call|inventing|restating|section]
        [--tier0]
        [--out benchmarks/results/summary_by_call_line24_0.5b.json]

On the first `--tasks` train tasks (the layout probe's, with its trigger, keep and summary cap, so the start's
summaries come from acon's reply cache when that probe ran), LangChain's middleware summarizes under the
`--start` text, one of the layout probe's (default: facts first with the contract, where the summary search
starts), with the config's summarizer or `--model`: a text is learned for the summarizer it will run on, and the
1.5B model half-writes the by-call form the 0.5B cannot. The screen's lost facts go to the optimizer
`--asks` times, each a minibatch drawn with its own seed, as the by-call question
(`optimizer.summary.rewrite.by_call_step`: each lost line shown under the call whose result held it, values and tool
names hidden, the form of `optimizer.summary.ceiling`'s summaries). Each line that passes the UT checks is added
above the messages, and the child is screened on the same tasks and paired per task with its parent (facts kept,
bootstrap interval); with `--tier0` the reference agent also runs both on their summaries.
`--question inventing` asks instead the search's invented-value question (`optimizer.summary.rewrite.StopInventing`,
through `ut_step` with no lost fact, so nothing else is asked): each ask shows the next line of the start's summaries
that states an id or amount no message held, values hidden. The 1.5B summarizer invents values in half its summaries
under either text, a fault a facts-kept count does not see, so the child is judged on both counts.
`--question restating` asks the search's restated-task question (`optimizer.summary.rewrite.StopRestating`), each
ask showing the next of the start's summaries that was the task's steps again with no result in it (values and tool
names hidden): the only summary of each of five validation tasks under the by-call text at tier 1, where the real
agent started over.
`--question section` asks for a section of the layout instead of a sentence (`optimizer.summary.sections`): each ask
shows the start's sections as written and a lost line of a kind no section names (values hidden), and the section
that passes the checks goes in before the last one.
What the optimizer wrote, what was refused and why, are in the JSON. Train tasks only: it decides whether the search
should ask this question.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_summary_instructions import tier0  # noqa: E402
from probe_summary_layout import knobs, screen_row, texts  # noqa: E402

from optimizer import _offline  # noqa: E402,F401
from optimizer.config import load_experiment  # noqa: E402
from optimizer.context.compressor import Compressor  # noqa: E402
from optimizer.context.thresholds import SUMMARY_MAX_TOKENS  # noqa: E402
from optimizer.evaluate.endpoints import ModelEndpoints  # noqa: E402
from optimizer.evaluate.strategy_runs import select_tasks  # noqa: E402
from optimizer.interrupts import run_main  # noqa: E402
from optimizer.search.task_order import spread  # noqa: E402
from optimizer.stats import said_gap  # noqa: E402
from optimizer.summary.call import CachedOptimizer  # noqa: E402
from optimizer.summary.langchain_target import LangChainSummary  # noqa: E402
from optimizer.summary.rewrite import OptimizerLM, Proposal, by_call_step, ut_step  # noqa: E402
from optimizer.summary.screen import ScreenResult, screen  # noqa: E402
from optimizer.summary.sections import section_step  # noqa: E402
from optimizer.world.task import Task  # noqa: E402

START = "facts-first+contract"
QUESTIONS = ("by-call", "inventing", "restating", "section")
STEMS = {q: f"summary_{q.replace('-', '_')}_line" for q in QUESTIONS}


def _log(message: str) -> None:
    print(f"probe_by_call_line: {message}", file=sys.stderr, flush=True)


def probe(
    lm: OptimizerLM,
    compressor: Compressor,
    tasks: Sequence[Task],
    at: tuple[int, int],
    asks: int,
    with_tier0: bool,
    start: str = START,
    question: str = "by-call",
) -> dict[str, Any]:
    """The start (a layout probe text, by name) screened, then each ask's line screened as a child of it and paired
    with it."""

    def target(text: str) -> LangChainSummary:
        return LangChainSummary(
            trigger_tokens=at[0], keep_messages=at[1], instructions=text, max_tokens=SUMMARY_MAX_TOKENS
        )

    def scored(text: str) -> tuple[ScreenResult, dict[str, Any]]:
        result = screen(target(text), tasks, compressor)
        return result, screen_row(result, tier0(target(text), tasks, compressor) if with_tier0 else None)

    parent_text = texts()[start]
    parent, parent_row = scored(parent_text)
    _log(f"{start}: {parent.kept} of {parent.needed} facts kept, {len(parent.lost)} lost")
    rows: dict[str, Any] = {start: parent_row | {"text": parent_text}}
    for ask in range(asks):
        proposal = _ask(lm, question, parent_text, parent, ask)
        name = f"{question}{ask}"
        asked = {"lines": list(proposal.llm_lines), "refused": proposal.refused, "reply": proposal.reply}
        _log(f"{name}: kept {list(proposal.llm_lines)}, refused {[why for _, why in proposal.refused]}")
        if not proposal.llm_lines:
            rows[name] = asked
            continue
        child, child_row = scored(proposal.text)
        gain = dataclasses.asdict(child.gain_over(parent))
        rows[name] = asked | child_row | {"text": proposal.text, "vs": start, "gain": gain}
        _log(f"{name}: {child.kept} of {child.needed} facts kept, per task {gain['mean']:+.2f}")
    return rows


def _ask(lm: OptimizerLM, question: str, parent_text: str, parent: ScreenResult, ask: int) -> Proposal:
    if question == "by-call":
        return by_call_step(lm, parent_text, parent.lost, seed=ask)
    if question == "section":
        return section_step(lm, parent_text, parent.lost, seed=ask)
    if question == "restating":
        plans = [s.restated for s in parent.summaries if s.restated][ask : ask + 1]
        if not plans:
            none_left = f"the start's summaries restate the task {ask} times, no more"
            return Proposal("ut", parent_text, (), [("", none_left)])
        return ut_step(lm, parent_text, (), seed=ask, restated=plans[0])
    shown = parent.invented_lines[ask : ask + 1]
    if not shown:
        return Proposal("ut", parent_text, (), [("", f"the start's summaries hold {ask} invented lines, no more")])
    return ut_step(lm, parent_text, (), seed=ask, invented=shown)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=ROOT / "experiments" / "summary_reach_long.toml")
    parser.add_argument("--tasks", type=int, default=24)
    parser.add_argument("--asks", type=int, default=2, help="questions asked, one minibatch seed each")
    parser.add_argument("--model", default=None, help="the summarizer model (default: the config's compressor)")
    parser.add_argument("--start", default=START, help="the layout probe's text the lines are added to (%(default)s)")
    parser.add_argument("--question", choices=QUESTIONS, default="by-call", help="what the optimizer is asked")
    parser.add_argument("--tier0", action="store_true", help="also run the reference agent on the summaries")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    for flag in ("tasks", "asks"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag}: must be at least 1, got {getattr(args, flag)}")
    if args.start not in texts():
        parser.error(f"--start: no layout probe text {args.start!r}; known: {', '.join(texts())}")
    config = load_experiment(args.config)
    summarizer = config.endpoints.compressor
    if args.model is not None:
        summarizer = summarizer.model_copy(update={"model": args.model})
    at = knobs(config.optimize.target, None, None)
    tasks = spread(select_tasks(config, "train", None))[: args.tasks]
    out = args.out or ROOT / "benchmarks" / "results" / f"{STEMS[args.question]}{len(tasks)}.json"
    started = time.perf_counter()
    roles = {"compressor": summarizer, "optimizer": config.endpoints.optimizer}
    with ModelEndpoints(roles, log=_log) as endpoints:
        lm = CachedOptimizer(endpoints.client("optimizer"), endpoints.response_cache(), 300)
        rows = probe(lm, endpoints.compressors(1)[0], tasks, at, args.asks, args.tier0, args.start, args.question)
    report = {
        "benchmark": "summary_by_call_line",
        "split": "train",
        "tasks": [t.id for t in tasks],
        "knobs": {"trigger": at[0], "keep": at[1], "summary_max_tokens": SUMMARY_MAX_TOKENS},
        "start": args.start,
        "question": args.question,
        "summarizer": summarizer.model,
        "optimizer": config.endpoints.optimizer.model,
        "optimizer_calls": lm.calls,
        "rows": rows,
        "seconds": round(time.perf_counter() - started, 1),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(table(report))
    return 0


def table(report: dict[str, Any]) -> str:
    lines = [
        f"the {report.get('question', 'by-call')} question on {len(report['tasks'])} train tasks, start "
        f"{report.get('start', START)}, summarizer "
        f"{report['summarizer']}, optimizer "
        f"{report['optimizer']} (trigger {report['knobs']['trigger']}, keep {report['knobs']['keep']})",
        "",
        "| text | line written | facts kept | vs start, per task | invented values | restated task | summary tokens "
        "| tier-0 success | mean peak |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in report["rows"].items():
        reasons = "; ".join(dict.fromkeys(why for _, why in row.get("refused", [])))
        written = "; ".join(row.get("lines", [])) or ("-" if "refused" not in row else f"none survived ({reasons})")
        if "kept" not in row:
            lines.append(f"| {name} | {written} | - | - | - | - | - | - | - |")
            continue
        gain = row.get("gain")
        vs = said_gap(gain) if gain else "-"
        solved = f"{row['tier0_success']:.2f} | {row['peak']:,.0f}" if "tier0_success" in row else "- | -"
        # Older reports lack the count (written before the invented-value question could be asked here).
        invented = f"{row['invented']} of {row['summaries']}" if "invented" in row else "-"
        restated = f"{row['restated']} of {row['summaries']}" if "restated" in row else "-"
        lines.append(
            f"| {name} | {written} | {row['kept']} of {row['needed']} | {vs} | {invented} | {restated} "
            f"| {row['tokens']:.0f} | {solved} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    run_main(main, "probe_by_call_line")
