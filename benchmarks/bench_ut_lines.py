"""What the optimizer model writes when the summary search asks it to protect a kind of lost fact.

The summary search's UT step asks one question per kind of fact its summaries lost (a value, a skill rule,
a write receipt, a paging warning, an error), shown one example line with its values hidden, and adds the
first line of the reply that passes every check. This benchmark asks those questions about real lost facts
of train tasks and reports, per kind, how many replies gave a usable line, why the rest were refused, and
every line written: the optimizer's half of the search, apart from the summarizer's.

The lost facts come from screening the seed text, under a LangChain-shaped summary with a low trigger, with a
summarizer that keeps nothing (a stub: every fact a summary folded is lost), so each kind of need a suite's
tasks carry shows up; the optimizer is the configured endpoint (the embedded 1.5B model by default). Train
tasks only.

    python benchmarks/bench_ut_lines.py                      # built-in and reach_long suites, 3 questions a kind
    python benchmarks/bench_ut_lines.py --scripted           # the harness only (a scripted optimizer)
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from optimizer import _offline  # noqa: E402,F401
from optimizer.config import load_experiment  # noqa: E402
from optimizer.context.compressor import Compressor  # noqa: E402
from optimizer.context.guideline import SEED_GUIDELINE, guideline_at  # noqa: E402
from optimizer.evaluate.endpoints import ModelEndpoints  # noqa: E402
from optimizer.evaluate.strategy_runs import select_tasks  # noqa: E402
from optimizer.interrupts import run_main  # noqa: E402
from optimizer.llm.cache import ResponseCache  # noqa: E402
from optimizer.llm.client import ChatClient  # noqa: E402
from optimizer.llm.endpoint import EndpointConfig  # noqa: E402
from optimizer.summary.call import CachedOptimizer  # noqa: E402
from optimizer.summary.langchain_target import LangChainSummary  # noqa: E402
from optimizer.summary.rewrite import OptimizerLM, ut_step  # noqa: E402
from optimizer.summary.screen import LostFact, screen  # noqa: E402
from optimizer.testing.stub_server import StubServer  # noqa: E402

CONFIGS = ("experiments/builtin.toml", "experiments/reach_long.toml")
FORGETFUL_SUMMARY = "Summary of the work so far."


def _log(message: str) -> None:
    print(f"bench_ut_lines: {message}", file=sys.stderr, flush=True)


def lost_facts(config_path: Path, tasks_used: int) -> tuple[str, list[LostFact]]:
    """Every fact a keep-nothing summary folds on the first train tasks of a suite, deduplicated by line."""
    config = load_experiment(config_path)
    tasks = select_tasks(config, "train", None)[:tasks_used]
    seed = guideline_at(SEED_GUIDELINE).texts.history
    with StubServer(lambda request: FORGETFUL_SUMMARY) as url:
        client = ChatClient(
            EndpointConfig(base_url=url, model="forgetful", max_retries=0), base_url=url, model="forgetful"
        )
        cache = ResponseCache(Path(tempfile.mkdtemp()) / "c.sqlite")
        result = screen(
            LangChainSummary(trigger_tokens=600, keep_messages=2, instructions=seed), tasks, Compressor(client, cache)
        )
    unique = {(f.kind, f.source): f for f in result.lost}
    return config.suite.type, list(unique.values())


def ask(lm: OptimizerLM, facts: Sequence[LostFact], per_kind: int) -> dict[str, Any]:
    seed = guideline_at(SEED_GUIDELINE).texts.history
    by_kind: dict[str, list[LostFact]] = {}
    for fact in facts:
        by_kind.setdefault(fact.kind, []).append(fact)
    out: dict[str, Any] = {}
    for kind, examples in sorted(by_kind.items()):
        asked = examples[:per_kind]
        usable, reasons, lines = 0, Counter[str](), []
        for fact in asked:
            proposal = ut_step(lm, seed, [fact])
            usable += bool(proposal.llm_lines)
            reasons.update(reason for _, reason in proposal.refused)
            lines.append({"kept": list(proposal.llm_lines), "refused": proposal.refused, "reply": proposal.reply})
            _log(f"{kind}: kept {list(proposal.llm_lines)} refused {[r for _, r in proposal.refused]}")
        out[kind] = {"asked": len(asked), "usable": usable, "refused": dict(reasons), "answers": lines}
    return out


def scripted(request: dict) -> str:
    prompt = str(request["messages"][-1]["content"])
    if "rule from a skill" in prompt:
        return "Copy every rule from a skill file word for word."
    return "refund_id = SKILL-1"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", action="append", type=Path, help=f"suites' configs (default: {', '.join(CONFIGS)})")
    parser.add_argument("--tasks", type=int, default=12, help="Train tasks each suite's lost facts come from.")
    parser.add_argument("--per-kind", type=int, default=3, help="Questions asked per kind of lost fact.")
    parser.add_argument("--scripted", action="store_true", help="a scripted optimizer: checks the harness only")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    configs = args.config or [ROOT / c for c in CONFIGS]
    out = args.out or ROOT / "benchmarks" / "results" / f"ut_lines{'_scripted' if args.scripted else ''}.json"
    started = time.perf_counter()
    suites = {}
    for path in configs:
        suite, facts = lost_facts(path, args.tasks)
        suites[suite] = facts
        _log(f"{suite}: {len(facts)} lost facts of kinds {sorted({f.kind for f in facts})}")
    results: dict[str, Any] = {}
    if args.scripted:
        with StubServer(scripted) as url:
            client = ChatClient(
                EndpointConfig(base_url=url, model="scripted", max_retries=0), base_url=url, model="scripted"
            )
            lm = CachedOptimizer(client, None, 200)
            results = {suite: ask(lm, facts, args.per_kind) for suite, facts in suites.items()}
            model = "scripted"
    else:
        config = load_experiment(configs[0])
        with ModelEndpoints({"optimizer": config.endpoints.optimizer}, log=_log) as endpoints:
            client = endpoints.client("optimizer")
            # No reply cache: a probe of what the model writes now, not of what it wrote last time.
            lm = CachedOptimizer(client, None, 200)
            results = {suite: ask(lm, facts, args.per_kind) for suite, facts in suites.items()}
            model = config.endpoints.optimizer.model
    report = {
        "benchmark": "ut_lines",
        "scripted": args.scripted,
        "model": model,
        "seconds": round(time.perf_counter() - started, 1),
        "machine": platform.machine(),
        "suites": results,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(table(report))
    return 0


def table(report: dict[str, Any]) -> str:
    lines = [
        f"optimizer lines per kind of lost fact, model: {report['model']}"
        f"{' (SCRIPTED: not a model)' if report['scripted'] else ''}",
        "",
        "| suite | kind | asked | usable line | refused (reason: count) |",
        "|---|---|---|---|---|",
    ]
    for suite, kinds in report["suites"].items():
        for kind, r in kinds.items():
            refused = "; ".join(f"{why}: {n}" for why, n in r["refused"].items()) or "-"
            lines.append(f"| {suite} | {kind} | {r['asked']} | {r['usable']} | {refused} |")
    return "\n".join(lines)


if __name__ == "__main__":
    run_main(main, "bench_ut_lines")
