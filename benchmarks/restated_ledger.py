"""Tier-1 episodes whose summarizer restated the task, against those whose summaries did not, from stored runs.

    python benchmarks/restated_ledger.py RUNS_DIR [RUNS_DIR ...] [--out benchmarks/results/restated_ledger.json]

A summary that is the task statement again, with nothing any call returned (`optimizer.summary.restated`), leaves
the real agent the plan and none of its results. This pools every stored tier-1 episode (the newest of each task,
seed and strategy; test-split runs are never read) in which a summarizer wrote at least one summary, and asks: of
the episodes where one summary restated the task, how many did the agent solve, against those where none did?
Per summarizer model, and per text (named after the layout probe's text it is, when it is one): summaries written,
summaries restating, episodes solved. An association over stored runs, not a controlled comparison: a restated
summary may mark a task the text was failing anyway. Prints the tables, writes JSON; no model runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from probe_summary_layout import texts  # noqa: E402
from scan_variance import SEALED  # noqa: E402

from optimizer.evaluate.store import EpisodeStore, read_meta  # noqa: E402
from optimizer.interrupts import run_main  # noqa: E402
from optimizer.stats import wilson_interval  # noqa: E402
from optimizer.summary.restated import restating_count  # noqa: E402


@dataclass(frozen=True)
class Summarized:
    """One tier-1 episode in which the summarizer wrote at least one summary."""

    run: str
    text: str
    summarizer: str
    task_id: str
    solved: bool
    summaries: int
    restating: int


def summarized(root: Path, names: dict[str, str]) -> Iterable[Summarized]:
    """Each run's episodes with a summary; a run is named by `names` (text -> layout probe name) when its
    instructions are one of the layout probe's texts, else by its strategy."""
    for directory in sorted(root.glob("*-llm-*")):
        meta = read_meta(directory)
        if not meta or meta.get("split") == SEALED:
            continue
        summarizer = str(((meta.get("endpoints") or {}).get("compressor") or {}).get("model") or "no model")
        instructions = (meta.get("strategy_config") or {}).get("instructions")
        name = names.get(instructions) if isinstance(instructions, str) else None
        for episode in EpisodeStore(directory).load():
            if episode.outcome == "infra_error":
                continue
            written, restating = restating_count([episode])
            if written:
                yield Summarized(
                    directory.name,
                    name or str(meta.get("strategy")),
                    summarizer,
                    episode.task_id,
                    episode.success,
                    written,
                    restating,
                )


def solved(group: Sequence[Summarized]) -> dict:
    passed = sum(e.solved for e in group)
    low, high = wilson_interval(passed, len(group))
    return {"episodes": len(group), "solved": passed, "interval": [round(low, 3), round(high, 3)]}


def split(group: Sequence[Summarized]) -> dict:
    return {
        "restated": solved([e for e in group if e.restating]),
        "not_restated": solved([e for e in group if not e.restating]),
    }


def said(s: dict) -> str:
    low, high = s["interval"]
    return f"{s['solved']} of {s['episodes']} [{low:.2f}, {high:.2f}]"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", type=Path, nargs="+", help="Directories of tier-1 run directories.")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "restated_ledger.json")
    args = parser.parse_args(argv)
    missing = [str(r) for r in args.roots if not r.is_dir()]
    if missing:
        print(f"restated_ledger: not a directory: {missing[0]}", file=sys.stderr)
        return 2
    names = {text: name for name, text in texts().items()}
    found = [e for root in args.roots for e in summarized(root, names)]
    if not found:
        print("restated_ledger: no stored tier-1 episode with a summary", file=sys.stderr)
        return 1
    by_model: dict[str, list[Summarized]] = defaultdict(list)
    by_text: dict[tuple[str, str], list[Summarized]] = defaultdict(list)
    for e in found:
        by_model[e.summarizer].append(e)
        by_text[(e.summarizer, e.text)].append(e)
    models = {model: split(group) for model, group in sorted(by_model.items())} | {"all": split(found)}
    print("| summarizer | episodes with a restated summary: solved | episodes without: solved |")
    print("|---|---|---|")
    for model, s in models.items():
        print(f"| {model} | {said(s['restated'])} | {said(s['not_restated'])} |")
    per_text = {}
    print("\n| summarizer | text | summaries restating | episodes solved |")
    print("|---|---|---|---|")
    for (model, text), group in sorted(by_text.items()):
        written, restating = sum(e.summaries for e in group), sum(e.restating for e in group)
        per_text[f"{model} / {text}"] = {"summaries": written, "restating": restating, **solved(group)}
        print(f"| {model} | {text} | {restating} of {written} | {sum(e.solved for e in group)} of {len(group)} |")
    report = {
        "benchmark": "restated_ledger",
        "roots": [str(r) for r in args.roots],
        "sealed_split_read": False,
        "by_summarizer": models,
        "by_text": per_text,
        "episodes": [asdict(e) for e in found],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    run_main(main, "restated_ledger")
