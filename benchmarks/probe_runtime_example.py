"""The README's runtime example run as written on the local 1.5B model, N times, beside variants of it.

    python benchmarks/probe_runtime_example.py [--runs 3] [--out benchmarks/results/runtime_example_probe.json]

Each run is the README block with only its address changed (as `tests/test_readme_examples_local.py` runs it),
through the local endpoint in front of the 1.5B model's llama-server (reused if one runs). A run passes when
the model made a real `read_doc` call and its answer names REF-7, the fact only the doc holds. Variants:
`as_written`; `system_message`, the same with a system message asking to use the tools and answer in one
sentence (an idea for the example's flakiness, measured before it was adopted). Temperature 0 as in the
example; two runs of one variant can still differ (a two-slot server is not deterministic).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from optimizer.interrupts import run_main  # noqa: E402
from tests.test_readme_examples_local import FACT, RUNTIME_REPORT, readme_block, run_as_written  # noqa: E402

SYSTEM = "Use the tools to find the answer, then give it in one sentence."
VARIANTS: dict[str, Callable[[str], str]] = {
    "as_written": lambda code: code,
    "system_message": lambda code: code.replace(
        'messages = [{"role": "user",', f'messages = [{{"role": "system", "content": "{SYSTEM}"}}, {{"role": "user",'
    ),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "runtime_example_probe.json")
    args = parser.parse_args(argv)
    from optimizer.llm.local import LocalServers
    from optimizer.llm.local.toolcall_proxy import serve

    block = readme_block("runtime-example")
    rows: dict[str, list[dict]] = {}
    with LocalServers(log=lambda _: None) as servers:
        servers.base_url("qwen2.5-coder-1.5b")
        httpd = serve(0)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        try:
            for name, change in VARIANTS.items():
                code = change(block)
                if name != "as_written" and code == block:
                    raise SystemExit(f"probe_runtime_example: the {name} variant no longer applies to the README block")
                for run in range(args.runs):
                    started = time.perf_counter()
                    printed, result = run_as_written(code, url, RUNTIME_REPORT)
                    calls = [c["function"]["name"] for m in result["messages"] for c in m.get("tool_calls") or ()]
                    row = {
                        "run": run,
                        "passed": FACT in printed and "read_doc" in calls,
                        "calls": calls,
                        "answer": printed[-300:],
                        "stats": result["stats"],
                        "seconds": round(time.perf_counter() - started),
                    }
                    rows.setdefault(name, []).append(row)
                    print(f"{name} {run}: {'pass' if row['passed'] else 'FAIL'} {calls}", file=sys.stderr, flush=True)
        finally:
            httpd.shutdown()
            httpd.server_close()
    summary = {name: f"{sum(r['passed'] for r in runs)} of {len(runs)}" for name, runs in rows.items()}
    report = {
        "benchmark": "runtime_example_probe",
        "date": dt.date.today().isoformat(),
        "passed": summary,
        "runs": rows,
    }
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    for name, text in summary.items():
        print(f"| {name} | {text} |")
    return 0


if __name__ == "__main__":
    run_main(main, "probe_runtime_example")
