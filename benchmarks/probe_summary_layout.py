"""What a summarizer keeps under instruction texts and layouts, before any search: the probe behind the closing part.

    python benchmarks/probe_summary_layout.py [--config experiments/summary_reach_long.toml] [--tasks 6]
        [--only NAME ...] [--model MODEL] [--frequency-penalty X] [--temperature T] [--samples N]
        [--summary-max-tokens N] [--trigger T] [--keep K]
        [--search-from JSON] [--text NAME=FILE ... [--against NAME]] [--tier0] [--show]
        [--out benchmarks/results/summary_layout_probe.json]

On the first `--tasks` train tasks (in turns from each family), LangChain's `SummarizationMiddleware` (trigger
`--trigger` tokens and keep `--keep` messages: unless given, the config's `[optimize.target]`'s, else 2,000 and 4)
summarizes with the config's compressor model under each text; the screen (`optimizer.summary.screen`) counts the needed
facts each summary folded and kept. Texts: LangChain's `default`; the `seed` with the retention contract
(`seed+contract`, where the summary search starts); the same with one reminder after the messages (`+remind`); a short
extractive text (`extract`) and the same with the reminder; the seed with the contract and a line against repetition
after the messages (`+once`), alone and with the reminder; the seed with a length budget above the contract (`+budget`)
or after the messages (`+budget-after`); the seed's sections with the facts first and progress as one last line
(`facts-first+contract`), and with the skill rules first (`rules-first+contract`); facts first with a worked example of
made-up values (`facts-first+example+contract`); facts first with the values asked for under the call that returned
them and the next tool named (`facts-by-call+contract`, the ceiling's form in words, paired with facts first); facts
first under rewordings that change no instruction
(`facts-first+contract~1` ... `~4`: how far wording alone moves the count, the noise of screening one text; each
is paired with its own text over the tasks, each task's share of needed facts kept, with a bootstrap interval).
`--search-from JSON` adds the candidates of a recorded search (a summary benchmark's JSON or a job's report.json),
each paired with its parent the same way: what the optimizer's lines did, on the scale of the wording noise.
`--text NAME=FILE` screens any text (a team's own summary prompt, a line written elsewhere), paired with `--against`.
The reminder is written here, not learned: it asks whether lines after
the conversation are read at all, which decides whether the search should try them. Per text: facts kept, tasks with
every needed fact visible, summary tokens, summaries that loop (one sentence said three times or more) and summaries
that claim a step the agent has not done (`optimizer.summary.claims`). `--model`, `--frequency-penalty` and
`--temperature` change the summarizer; `--samples N` draws N summaries of each history, one per sampling seed, and
pools each task's facts over them (at temperature 0 a one-word rewording moves a 0.5B summarizer's count by a third;
whether that is the text or one greedy draw is what sampling asks); `--summary-max-tokens` caps every summary; `--show`
prints every summary that lost a fact, and every false claim; `--tier0` also runs the reference agent on the summaries
(tier-0 success and mean peak per text: what a knob such as `--keep` costs). Summaries come from acon's reply cache when
present.
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

from bench_summary_instructions import tier0_draws  # noqa: E402

from optimizer import _offline  # noqa: E402,F401
from optimizer.agent.episode import Episode  # noqa: E402
from optimizer.config import load_experiment  # noqa: E402
from optimizer.context.guideline import SEED_GUIDELINE, guideline_at  # noqa: E402
from optimizer.context.summary_template import CLOSING_LEAD, with_closing  # noqa: E402
from optimizer.context.thresholds import SUMMARY_MAX_TOKENS  # noqa: E402
from optimizer.evaluate.endpoints import ModelEndpoints  # noqa: E402
from optimizer.evaluate.strategy_runs import select_tasks  # noqa: E402
from optimizer.interrupts import run_main  # noqa: E402
from optimizer.search.task_order import spread  # noqa: E402
from optimizer.stats import said_gap  # noqa: E402
from optimizer.summary.contract_text import with_contract  # noqa: E402
from optimizer.summary.defaults import target_default  # noqa: E402
from optimizer.summary.knobs import Judged  # noqa: E402
from optimizer.summary.langchain_target import LangChainSummary  # noqa: E402
from optimizer.summary.layouts import FACTS_FIRST  # noqa: E402
from optimizer.summary.screen import LostFact, ScreenResult, screen  # noqa: E402

REMIND = (
    "Now write the summary. First copy, exactly as written, every rule line, every id or number a later step "
    "needs, every write's returned id and every warning that a result was partial. Then describe progress."
)
# Against the loop the 0.5B model falls into under the seed's sections (one paragraph repeated under each).
ONCE = "Write each fact once, under one section only; never repeat a sentence."
EXTRACT = (
    "You condense an AI agent's earlier steps so it can continue its task.\n"
    "Copy exactly, one per line: every rule the agent read, every id, code, price or quantity it found, the id "
    "every write returned, and every warning that a result was partial (page 1 of 2).\n"
    "Then say in one sentence what is done and what is left."
)
# A length budget: the learned text's summaries ran twice the default's length (380 vs 172 tokens with the 1.5B
# summarizer on reach_long), which is where its higher tier-1 peak came from. Does a stated budget bound them?
BUDGET = "Keep the whole summary under 120 words: values, ids, rules and warnings first, prose last."
# Facts first with a section for skill rules on top and no list of example kinds to fill in: under FACTS_FIRST the
# 0.5B summarizer, on 8 built-in train tasks, kept 0 of 22 facts, filling the list ("amounts, quantities, dates")
# with made-up values and keeping no rule. Under this one it kept 0 of 22 there too, and 0 of 17 on 8 reach_long
# train tasks (FACTS_FIRST 10 of 17): it wrote the task's steps or one rule list over and over.
RULES_FIRST = (
    "You maintain the working memory of an agent that is partway through a task. Rewrite the earlier\n"
    "steps as a short structured summary the agent can continue from without re-reading anything.\n\n"
    "Use exactly these sections, in this order, as bullet points:\n\n"
    "RULES: each rule the agent read in a skill or policy file and must still follow, copied word for word\n"
    "with its rule id.\n"
    "VALUES: each id, amount or other value the remaining work needs, as `name = value`, copied exactly from\n"
    "the message it appears in. Write only values the messages contain.\n"
    "DONE: each write that already happened, with the id its tool returned, so that none is repeated.\n"
    "ERRORS AND WARNINGS: each error message and each partial-results warning, word for word.\n"
    "PROGRESS: one line: what is done and the next step.\n\n"
    "Leave out a section that would be empty. Drop pleasantries, repeated text, and tool output the task will\n"
    "not use again."
)
# A small model follows a shown format more readily than a described one: the facts-first layout with a worked
# example whose values are made up (the invented-values count says whether the summarizer copies them).
EXAMPLE = (
    "An example of the form (made-up values; write the real ones from the messages, never these):\n"
    "- customer_id = CUS-1234\n"
    "- order_id = ORD-5678 (from page 2 of 2)\n"
    "- unit price = 10.00 EUR\n"
    "- rule (skill gift_cards): <the rule line, word for word>\n"
    "- DONE: reserve_stock returned RSV-00001\n"
    "- PROGRESS: skill and order read; next: call get_product."
)

# The ceiling's form asked for in words (`optimizer.summary.ceiling`: each needed line verbatim under the call whose
# result held it, and the tool called next). From the ceiling's summaries the reference agent solves every
# validation task at tier 0 and the 1.5B agent 4 of 10 at tier 1, against 1 of 10 from the learned facts-first
# text: does a 0.5B summarizer asked for that form keep more, before any optimizer is asked to write it?
FACTS_BY_CALL = FACTS_FIRST.replace(
    "VARIABLES: every identifier, number and value the remaining work may need, as `name = value`\n"
    "(order ids, customer ids, ticket ids, amounts, quantities, dates, file names, page numbers).\n",
    "VALUES BY CALL: for each tool call whose result holds an identifier, number or value the remaining\n"
    "work may need, the call as it was made, and under it each such line of its result, word for word.\n",
).replace(
    "PROGRESS: one line: what is done and the next step.", "PROGRESS: one line: what is done and the tool to call next."
)
# What a built-in text is measured against, paired per task: the text it changes.
BUILT_IN_PARENTS = {"facts-by-call+contract": "facts-first+contract", "default+contract": "default"}

# Rewordings that change no instruction: how far a meaningless edit moves what the summarizer keeps is the noise a
# screen of one text on a few tasks carries (a UT line that keeps 4 of 12 facts against its parent's 7 is only a
# loss if wording alone does not move the count that far).
REWORDINGS = (
    ("a short structured summary", "a brief structured summary"),
    ("Rewrite the earlier", "Restate the earlier"),
    ("in this order, as bullet points", "in this order, as a bulleted list"),
    ("Drop pleasantries, repeated text", "Leave out pleasantries, repeated text"),
)


def reworded(text: str) -> dict[str, str]:
    """`text` under each of `REWORDINGS` that applies, one edit at a time, named `~1`, `~2`, ... by the edit."""
    out = {}
    for n, (before, after) in enumerate(REWORDINGS, 1):
        if before in text:
            out[f"~{n}"] = text.replace(before, after, 1)
    return out


def texts() -> dict[str, str]:
    seed = with_contract(guideline_at(SEED_GUIDELINE).texts.history)
    default = str(target_default("langchain").text)
    return {
        "default": default,
        # LangChain's prompt with acon's contract before its messages block: what a user appends to the prompt they
        # run, with no learned layout. The 0.5B summarizer restates the task under the default and under no
        # contract text; this asks whether the contract alone stops it.
        "default+contract": with_contract(default),
        "seed+contract": seed,
        "seed+contract+remind": with_closing(seed, REMIND),
        "extract": EXTRACT,
        "extract+remind": with_closing(EXTRACT, REMIND),
        "seed+contract+once": with_closing(seed, f"{CLOSING_LEAD}\n{ONCE}"),
        "seed+contract+remind+once": with_closing(seed, f"{REMIND} {ONCE}"),
        "seed+contract+budget": with_contract(f"{guideline_at(SEED_GUIDELINE).texts.history.rstrip()}\n{BUDGET}"),
        "seed+contract+budget-after": with_closing(seed, f"{CLOSING_LEAD}\n{BUDGET}"),
        "facts-first+contract": with_contract(FACTS_FIRST),
        "rules-first+contract": with_contract(RULES_FIRST),
        "facts-first+example+contract": with_contract(f"{FACTS_FIRST}\n\n{EXAMPLE}"),
        "facts-by-call+contract": with_contract(FACTS_BY_CALL),
        **{f"facts-first+contract{n}": t for n, t in reworded(with_contract(FACTS_FIRST)).items()},
    }


def table(rows: dict[str, dict]) -> str:
    lines = [
        "| text | facts kept | share | tasks all visible | summary tokens | looping summaries | false claims "
        "| invented values | restated task | tier-0 success | mean peak |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in rows.items():
        share = r["kept"] / r["needed"] if r["needed"] else 1.0
        looping = f"{r['looped']} of {r['summaries']}" if "looped" in r else "-"
        claiming = f"{r['claimed']} of {r['summaries']}" if "claimed" in r else "-"
        inventing = f"{r['invented']} of {r['summaries']}" if "invented" in r else "-"
        restating = f"{r['restated']} of {r['summaries']}" if "restated" in r else "-"
        solved = f"{r['tier0_success']:.2f} | {r['peak']:,.0f}" if "tier0_success" in r else "- | -"
        lines.append(
            f"| {name} | {r['kept']} of {r['needed']} | {share:.2f} | {r['visible']:.2f} | {r['tokens']:.0f} "
            f"| {looping} | {claiming} | {inventing} | {restating} | {solved} |"
        )
    return "\n".join(lines)


def parents_of(names: Sequence[str], recorded: dict[str, str]) -> dict[str, str]:
    """What each text is paired with: a rewording (`NAME~n`) with its text, a recorded candidate or a given text
    with its parent, a built-in variant with the text it changes."""
    out = {name: name.split("~")[0] for name in names if "~" in name}
    return out | {name: parent for name, parent in (BUILT_IN_PARENTS | recorded).items() if name in names}


def given_texts(specs: Sequence[str], against: str | None) -> tuple[dict[str, str], dict[str, str]]:
    """`NAME=FILE` texts (a team's own summary prompt, a candidate written elsewhere) and, with `against`, each one's
    parent: screened and paired like a recorded search's candidates."""
    texts: dict[str, str] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise SystemExit(f"probe_summary_layout: --text {spec!r}: expected NAME=FILE")
        try:
            texts[name] = Path(path).read_text()
        except OSError as error:
            raise SystemExit(f"probe_summary_layout: --text {spec!r}: {error.strerror}") from None
        if not texts[name].strip():
            raise SystemExit(f"probe_summary_layout: --text {spec!r}: the file is empty")
    return texts, ({name: against for name in texts} if against else {})


def against_parents(screens: dict[str, ScreenResult], parents: dict[str, str]) -> dict[str, dict]:
    """Each text minus its parent, paired over tasks on each task's share of needed facts kept, with a bootstrap
    interval: for a rewording, how far a change of no instruction moves a screen of this many tasks; for an
    optimizer's candidate, what its lines did, on the same scale."""
    out = {}
    for name, parent in parents.items():
        if name in screens and parent in screens:
            out[name] = {"vs": parent, **dataclasses.asdict(screens[name].gain_over(screens[parent]))}
    return out


def recorded_search(path: Path) -> tuple[dict[str, str], dict[str, str]]:
    """The texts of a recorded search's candidates and each one's parent (none for a start), from a summary
    benchmark's JSON or a job's report.json: screened again here on more tasks, by name."""
    try:
        candidates = json.loads(path.read_text())["search"]["candidates"]
        texts = {c["name"]: c["text"] for c in candidates}
        parents = {c["name"]: c["parent"] for c in candidates if c.get("parent")}
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise SystemExit(f"probe_summary_layout: --search-from {path}: no recorded search ({error!r})") from None
    return texts, parents


def losses(lost: Sequence[LostFact]) -> str:
    """Each summary that lost a fact, once, under the facts it lost: what a person reads to see why."""
    by_summary: dict[tuple[str, int], list[LostFact]] = {}
    for fact in lost:
        by_summary.setdefault((fact.task_id, fact.step), []).append(fact)
    parts = []
    for (task_id, step), facts in by_summary.items():
        named = "; ".join(f"{f.kind} {f.literal!r} from {f.source!r}" for f in facts)
        parts.append(f"--- {task_id} step {step}: lost {named}\n{facts[0].summary}")
    return "\n".join(parts)


def by_task(result: ScreenResult) -> dict[str, list[int]]:
    """Facts kept and needed per task, pooled over its samples (as the JSON stores them)."""
    return {task_id: list(counts) for task_id, counts in result.counts_by_task().items()}


def screen_row(result: ScreenResult, episodes: Sequence[Episode] | None = None) -> dict[str, Any]:
    """One text's row: what its summaries kept, per task too, and with `episodes` the reference agent's success and
    mean peak on them."""
    row: dict[str, Any] = {
        "kept": result.kept,
        "needed": result.needed,
        "visible": result.visible_share,
        "tokens": result.summary_tokens,
        "summaries": len(result.summaries),
        "looped": result.looped,
        "claimed": result.claimed,
        # A summary can keep every needed fact and still state ids no call returned, which a real agent believes.
        "invented": result.inventing,
        # The task's plan again with no result in it: the summary a real agent starts over from.
        "restated": result.restating,
        "lost_by_kind": result.lost_by_kind,
        "by_task": by_task(result),
    }
    if episodes is not None:
        judged = Judged.of([e.success for e in episodes], [e.metrics.peak_tokens for e in episodes])
        row |= {"tier0_success": judged.success, "peak": judged.peak}
    return row


def knobs(configured: object, trigger: int | None, keep: int | None) -> tuple[int, int]:
    """The trigger and keep asked for, else the config target's (the texts are measured where the job runs them)."""
    trigger = trigger or getattr(configured, "trigger_tokens", None) or 2000
    return trigger, keep or getattr(configured, "keep_messages", None) or 4


def chosen_texts(args: argparse.Namespace) -> tuple[dict[str, str], dict[str, str]]:
    """The texts to screen (built in, from a recorded search, from files) and each paired one's parent; a name that
    clashes or is unknown stops the probe before any model starts."""
    known, recorded = texts(), dict[str, str]()
    if args.search_from is not None:
        found, recorded = recorded_search(args.search_from)
        clashing = sorted(name for name, text in found.items() if known.get(name, text) != text)
        if clashing:  # its children would be paired with a parent they were not written from
            raise SystemExit(f"probe_summary_layout: --search-from: {', '.join(clashing)} differ from this probe's")
        known |= found
    given, given_parents = given_texts(args.text, args.against)
    clashing = sorted(set(given) & set(known))
    if clashing:
        raise SystemExit(f"probe_summary_layout: --text: {', '.join(clashing)} already names a text")
    if args.against is not None and args.against not in known:
        raise SystemExit(f"probe_summary_layout: --against: no text named {args.against}")
    known, recorded = known | given, recorded | given_parents
    unknown = sorted(set(args.only or ()) - set(known))
    if unknown:
        raise SystemExit(
            f"probe_summary_layout: --only: no text named {', '.join(unknown)} (known: {', '.join(known)})"
        )
    wanted = None if args.only is None else {*args.only, *given, *given_parents.values()}
    chosen = {k: v for k, v in known.items() if wanted is None or k in wanted}
    parents = parents_of(list(chosen), recorded)
    return chosen, parents


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, default=ROOT / "experiments" / "summary_reach_long.toml")
    parser.add_argument("--tasks", type=int, default=6)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--model", default=None, help="the summarizer model (default: the config's compressor)")
    parser.add_argument(
        "--frequency-penalty", type=float, default=None, help="the summarizer frequency penalty (default: the config)"
    )
    parser.add_argument(
        "--temperature", type=float, default=None, help="the summarizer temperature (default: the config's)"
    )
    parser.add_argument(
        "--samples",
        type=int,
        default=1,
        metavar="N",
        help="summaries per history, one per sampling seed 1..N (1: one as configured); a task's facts are pooled "
        "over its samples, so the pairs stay one per task",
    )
    parser.add_argument(
        "--summary-max-tokens",
        type=int,
        default=SUMMARY_MAX_TOKENS,
        metavar="N",
        help="cap every summary (%(default)s)",
    )
    parser.add_argument(
        "--trigger", type=int, default=None, help="LangChain's trigger, tokens (default: the config target's, or 2000)"
    )
    parser.add_argument(
        "--keep", type=int, default=None, help="LangChain's keep=('messages', N) (default: the config's target, or 4)"
    )
    parser.add_argument(
        "--tier0",
        action="store_true",
        help="also run the reference agent on the summaries: tier-0 success and mean peak per text",
    )
    parser.add_argument(
        "--search-from",
        type=Path,
        default=None,
        metavar="JSON",
        help="also offer the candidates of a recorded search (a summary benchmark's JSON or a job's report.json), "
        "each paired with its parent",
    )
    parser.add_argument(
        "--text", action="append", default=[], metavar="NAME=FILE", help="also screen the text in FILE, as NAME"
    )
    parser.add_argument(
        "--against", default=None, metavar="NAME", help="pair each --text with this text (a known name)"
    )
    parser.add_argument("--show", action="store_true", help="print each summary that lost a fact, and what it lost")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "summary_layout_probe.json")
    args = parser.parse_args(argv)
    config = load_experiment(args.config)
    args.trigger, args.keep = knobs(config.optimize.target, args.trigger, args.keep)
    tasks = spread(select_tasks(config, "train", None))[: args.tasks]
    chosen, parents = chosen_texts(args)
    rows: dict[str, dict] = {}
    screens: dict[str, ScreenResult] = {}
    summarizer = config.endpoints.compressor
    if args.model is not None:
        summarizer = summarizer.model_copy(update={"model": args.model})
    if args.frequency_penalty is not None:
        summarizer = summarizer.model_copy(update={"frequency_penalty": args.frequency_penalty})
    if args.temperature is not None:
        summarizer = summarizer.model_copy(update={"temperature": args.temperature})
    if args.samples < 1:
        parser.error("--samples must be at least 1")
    roles = {"compressor": summarizer}
    with ModelEndpoints(roles, log=lambda m: print(m, file=sys.stderr)) as endpoints:
        compressors = endpoints.compressors(args.samples)
        for name, text in chosen.items():
            started = time.perf_counter()
            target = LangChainSummary(
                trigger_tokens=args.trigger,
                keep_messages=args.keep,
                instructions=text,
                max_tokens=args.summary_max_tokens,
            )
            result = screens[name] = screen(target, tasks, compressors)
            rows[name] = screen_row(result, tier0_draws(target, tasks, compressors) if args.tier0 else None)
            rows[name]["seconds"] = round(time.perf_counter() - started, 1)
            print(f"{name}: {rows[name]}", file=sys.stderr, flush=True)
            if args.show:
                print(losses(result.lost), file=sys.stderr, flush=True)
                for claim in result.claims:
                    print(f"--- false claim: {claim}", file=sys.stderr, flush=True)
    report = {
        "benchmark": "summary_layout_probe",
        "model": summarizer.model,
        "frequency_penalty": summarizer.frequency_penalty,
        "temperature": summarizer.temperature,
        "samples": args.samples,
        "summary_max_tokens": args.summary_max_tokens,
        "suite": config.suite.type,
        "trigger": args.trigger,
        "keep": args.keep,
        "tasks": [t.id for t in tasks],
        "rows": rows,
        "against_parent": against_parents(screens, parents),
        "texts": chosen,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(table(rows))
    for name, gap in report["against_parent"].items():
        print(f"{name} minus {gap['vs']}, facts kept per task: {said_gap(gap)}")
    return 0


if __name__ == "__main__":
    run_main(main, "probe_summary_layout")
