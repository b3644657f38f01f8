"""The README's quality rows, rendered from `benchmarks/results/quality.json` instead of copied by hand.

`python benchmarks/readme_figures.py` prints the rows; `--write` puts them between the README's
`quality-rows` markers. tests/test_readme_figures.py fails when the README and the JSON disagree, so a
re-run benchmark cannot leave stale or favourably rounded figures behind.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from optimizer.interrupts import run_main  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "quality.json"
README = ROOT / "README.md"
START, END = "<!-- quality-rows:start (benchmarks/readme_figures.py --write) -->", "<!-- quality-rows:end -->"

# What each suite's row is called; the figures themselves all come from the JSON.
LABELS = {
    "bfcl_long_context": "BFCL `multi_turn_long_context`, {tasks} tasks (`{learned}`, learned on its train split)",
    "builtin": "built-in suite, {tasks} tasks (`{learned}`)",
    "bfcl_base": "BFCL `multi_turn_base`, {tasks} tasks (control; `{learned}`)",
}


def _peak(row: dict) -> str:
    return f"{row['peak_tokens_mean']:,.0f}"


def _ratio(row: dict) -> str:
    return f" ({row['peak_vs_none']:.2f} ×)" if row.get("peak_vs_none") is not None else ""


def _best_baseline(rows: list[dict]) -> dict:
    """The baseline a user would pick: highest success, then lowest mean peak."""
    baselines = [r for r in rows if r["kind"] == "baseline"]
    return min(baselines, key=lambda r: (-r["success"], r["peak_tokens_mean"]))


def learned_paths(command: str) -> dict[str, str]:
    """`--learned suite=path,...` as the benchmark was run, so a row names the file it measured."""
    match = re.search(r"--learned (\S+)", command)
    pairs = match.group(1).split(",") if match else []
    return dict(pair.split("=", 1) for pair in pairs)


def render(results: dict) -> str:
    paths = learned_paths(results["command"])
    lines = [
        "| | learned guideline | best baseline | oracle (floor) | `none` | command |",
        "|---|---|---|---|---|---|",
    ]
    for suite, label in LABELS.items():
        rows = [r for r in results["rows"] if r["suite"] == suite and r["recall"] == "honest"]
        if not rows:
            continue
        by_kind = {r["kind"]: r for r in rows if r["kind"] != "baseline"}
        learned, oracle, none = by_kind["learned"], by_kind["oracle"], by_kind["control"]
        best = _best_baseline(rows)
        cells = [
            label.format(tasks=learned["tasks"], learned=paths.get(suite, "?")),
            f"{learned['success']:.2f} success, mean peak **{_peak(learned)}**{_ratio(learned)}",
            f"`{best['strategy']}` {best['success']:.2f}, {_peak(best)}{_ratio(best)}",
            f"{oracle['success']:.2f}, {_peak(oracle)}{_ratio(oracle)}",
            f"{none['success']:.2f}, {_peak(none)}",
            "`bench_quality.py`",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def readme_block(text: str) -> str:
    """What stands between the markers today (the markers' own lines excluded)."""
    if START not in text or END not in text.split(START, 1)[1]:
        raise SystemExit(f"README.md has no {START!r} ... {END!r} block")
    return text.split(START, 1)[1].split(END, 1)[0].strip("\n")


def disagreement(readme_text: str, results: dict) -> str | None:
    """None when the README shows exactly what the JSON holds, else the first line that differs."""
    shown, expected = readme_block(readme_text).splitlines(), render(results).splitlines()
    for line_shown, line_expected in zip(shown, expected, strict=False):
        if line_shown != line_expected:
            return f"README shows {line_shown!r}, quality.json gives {line_expected!r}"
    if len(shown) != len(expected):
        return f"README shows {len(shown)} quality lines, quality.json gives {len(expected)}"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="replace the README's quality rows")
    args = parser.parse_args(argv)
    rows = render(json.loads(RESULTS.read_text()))
    if not args.write:
        print(rows)
        return 0
    text = README.read_text()
    head, tail = text.split(START, 1)
    README.write_text(f"{head}{START}\n{rows}\n{END}{tail.split(END, 1)[1]}")
    print(
        f"README.md: {rows.count(chr(10)) - 1} quality rows written from {RESULTS.relative_to(ROOT)}", file=sys.stderr
    )
    return 0


if __name__ == "__main__":
    run_main(main, "readme_figures")
