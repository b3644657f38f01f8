"""Runtime vs agent loop on one 50-step conversation: compressor calls and cache-breaking requests.

The agent loop runs a synthetic 50-step task (`bench_limits.archive_task`: one ~1.2 kB static page per
step, then an answer that needs page 0's key) with the reference agent under each guideline; a fresh
runtime is then fed the same conversation as OpenAI messages before every step, as a user's agent would
call it. Both use the scripted compressor on an in-process stub with no reply cache, so every
compression is a real HTTP call and is counted. Reported per guideline: requests, compressor calls
(loop: its compression records that called the model; runtime: `stats.compressor_calls`), requests
whose prefix differed from the previous request's (cache-breaking), breaking requests that made no
compression (the prefix moved without a reason: must be 0), and whether every request was identical.

    .venv/bin/python benchmarks/bench_runtime.py [--steps 50] [--json benchmarks/results/runtime.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_limits import archive_task  # noqa: E402

from optimizer.agent.conversation import conversation_before  # noqa: E402
from optimizer.agent.loop import EpisodeServices, _message_text, run_episode  # noqa: E402
from optimizer.agent.reference import ReferenceAgent  # noqa: E402
from optimizer.context.compressor import Compressor  # noqa: E402
from optimizer.context.strategies import GuidelineStrategy, parse_strategy  # noqa: E402
from optimizer.interrupts import run_main  # noqa: E402
from optimizer.llm.client import ChatClient  # noqa: E402
from optimizer.llm.endpoint import EndpointConfig  # noqa: E402
from optimizer.runtime import ContextRuntime, RetentionMap  # noqa: E402
from optimizer.testing.scripted import scripted_models  # noqa: E402
from optimizer.testing.stub_server import StubServer  # noqa: E402

STRATEGIES = {
    "seed": lambda: GuidelineStrategy(guideline="guidelines/seed/seed.md"),
    "learned quickstart": lambda: GuidelineStrategy(guideline="guidelines/learned/quickstart.md"),
    "learned bfcl_long_context": lambda: GuidelineStrategy(guideline="guidelines/learned/bfcl_long_context.md"),
    "llm_history (ACON)": lambda: parse_strategy("llm_history"),
    "clear_tool_uses": lambda: parse_strategy("clear_tool_uses"),
}


def measure(name: str, steps: int, url: str) -> dict:
    config = EndpointConfig(base_url=url, model="scripted", backoff_s=0.0)
    task = archive_task(steps, 1200)
    loop_compressor = Compressor(ChatClient(config, base_url=url, model="scripted"))
    strategy = STRATEGIES[name]()
    started = time.perf_counter()
    episode = run_episode(task, ReferenceAgent(task.reference), strategy, EpisodeServices(compressor=loop_compressor))
    loop_s = time.perf_counter() - started
    env = task.make_env()
    runtime = ContextRuntime(
        strategy,
        retention=RetentionMap.from_specs(env.tools(0)),
        compressor=Compressor(ChatClient(config, base_url=url, model="scripted")),
    )
    identical = True
    unexplained = 0
    started = time.perf_counter()
    for step in episode.steps:
        system = {"role": "system", "content": episode.text(step.request[0]["text"])}
        compressions = runtime.stats.compressions
        breaks = runtime.stats.cache_breaks
        sent = runtime.compact([system, *conversation_before(episode, step.step)], tool_format="json")
        identical &= [{"role": m["role"], "text": episode.store(_message_text(m))} for m in sent] == step.request
        if runtime.stats.cache_breaks > breaks and runtime.stats.compressions == compressions:
            unexplained += 1
    runtime_s = time.perf_counter() - started
    loop_calls = sum(1 for r in episode.records if r.compressor_usage is not None and not r.compressor_cached)
    return {
        "strategy": name,
        "version": strategy.version(),
        "outcome": episode.outcome,
        "requests": len(episode.steps),
        "loop_compressor_calls": loop_calls,
        "loop_compressor_calls_made": loop_compressor.calls,
        "runtime_compressor_calls": runtime.stats.compressor_calls,
        "loop_cache_breaks": sum(s.cache_break for s in episode.steps),
        "runtime_cache_breaks": runtime.stats.cache_breaks,
        "breaks_without_compression": unexplained,
        "compressions": runtime.stats.compressions,
        "identical_requests": identical,
        "peak_tokens": episode.metrics.peak_tokens,
        "loop_s": round(loop_s, 2),
        "runtime_s": round(runtime_s, 2),
    }


def table(rows: list[dict]) -> str:
    head = (
        "strategy",
        "requests",
        "compressor calls loop / runtime",
        "cache-breaking requests loop / runtime",
        "breaks without a compression",
        "identical requests",
        "peak tokens",
    )
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lines.append(
            f"| {r['strategy']} | {r['requests']} | {r['loop_compressor_calls']} / "
            f"{r['runtime_compressor_calls']} | {r['loop_cache_breaks']} / {r['runtime_cache_breaks']} | "
            f"{r['breaks_without_compression']} | {'yes' if r['identical_requests'] else 'NO'} | "
            f"{r['peak_tokens']:,} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "runtime.json")
    args = parser.parse_args()
    with StubServer(scripted_models) as url:
        rows = [measure(name, args.steps, url) for name in STRATEGIES]
    print(table(rows))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"steps": args.steps, "page_bytes": 1200, "rows": rows}, indent=2) + "\n")
    print(f"wrote {args.json}")
    bad = [
        r["strategy"]
        for r in rows
        if r["runtime_compressor_calls"] > r["loop_compressor_calls"]
        or r["breaks_without_compression"]
        or not r["identical_requests"]
    ]
    if bad:
        raise SystemExit(f"runtime worse than the loop for: {', '.join(bad)}")


if __name__ == "__main__":
    run_main(main, "bench_runtime")
