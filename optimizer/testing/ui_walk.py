"""Review a finished job in the MLflow UI the way a person would, following links only; screenshots of each page.

    python -m optimizer.testing.ui_walk JOB_DIR --out SCREENSHOT_DIR

Starts `acon ui JOB_DIR`, opens the job's parent run in headless Chromium, reads the description's first
failed pair, then follows that row's links: the pair's diff (its HTML must name the missing literals) and
the compressed and full episodes' traces (each must show its `episode TASK · STRATEGY` root). Every page
is saved as a PNG. A page that does not render what it should is an error naming the page.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from optimizer.cli.ui_cmd import free_port
from optimizer.testing.browser import BrowserError, Chromium, find_chromium

# The description's pair rows: (pair, outcome, missing, lost at, diff link, trace links).
FIRST_FAILED_ROW = """
(() => {
  const row = [...document.querySelectorAll('tr')]
    .find(r => r.cells.length === 6 && r.cells[1].innerText.trim() === 'failed');
  if (!row) return null;
  const link = text => [...row.querySelectorAll('a')].find(a => a.textContent.trim() === text)?.href || null;
  return {pair: row.cells[0].innerText.trim(), missing: row.cells[2].innerText.trim(),
          diff: link('diff'), compressed: link('compressed'), full: link('full')};
})()
"""
# The artifact viewer shows an HTML file in a sandboxed frame loaded from a blob of this page's origin.
ARTIFACT_FRAME_TEXT = """
(async () => {
  const frame = document.querySelector('iframe[src^="blob:"]');
  if (!frame) return null;
  return await (await fetch(frame.src)).text();
})()
"""


@dataclass(frozen=True)
class Page:
    name: str
    url: str
    screenshot: str


def walk(job_dir: Path, out: Path, *, chromium: str | None = None, timeout_s: float = 90.0) -> list[Page]:
    """The pages visited, in order: the parent run, the pair's diff, the compressed trace, the full trace."""
    from optimizer.tracking.parent_runs import ParentRuns

    chromium = chromium or find_chromium()
    if chromium is None:
        raise BrowserError("no Chromium on PATH (Debian: apt-get install chromium)")
    state = ParentRuns.read(job_dir)
    if state is None or "optimize" not in state.runs:
        raise BrowserError(f"{job_dir} has no finished `acon optimize` run (mlflow_run.json)")
    port = free_port(0)
    ui = subprocess.Popen(
        [sys.executable, "-m", "optimizer", "ui", str(job_dir), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        assert ui.stdout is not None
        printed = ui.stdout.readline().strip()  # the experiment page, once the server answers
        if not printed:
            raise BrowserError(f"acon ui exited with code {ui.wait(30)} before serving")
        with Chromium(chromium) as browser:
            return _review(browser, printed, state.runs["optimize"], out, timeout_s)
    finally:
        if ui.poll() is None:
            os.kill(ui.pid, signal.SIGINT)  # as Ctrl-C: acon stops its server
            try:
                ui.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(ui.pid, signal.SIGKILL)


def _review(browser: Chromium, experiment_url: str, run_id: str, out: Path, timeout_s: float) -> list[Page]:
    pages = []
    parent = f"{experiment_url}/runs/{run_id}"
    browser.open(parent)
    browser.wait_for(
        "document.body.innerText.includes('Failures to review')",
        timeout_s=timeout_s,
        what="the parent run's description",
    )
    browser.evaluate(
        "[...document.querySelectorAll('button, a, span')].find(e => e.textContent.trim() === "
        "'Show more')?.click() ?? true"
    )
    row = browser.wait_for(FIRST_FAILED_ROW, timeout_s=timeout_s, what="a failed pair in the description")
    if not (row["diff"] and row["compressed"] and row["full"]):
        raise BrowserError(f"the pair row of {row['pair']} lacks a link: {row}")
    pages.append(Page("parent run", parent, str(browser.screenshot(out / "1-parent-run.png"))))

    browser.open(row["diff"])
    html = browser.wait_for(ARTIFACT_FRAME_TEXT, timeout_s=timeout_s, what="the pair's diff")
    task = row["pair"].split(" · ")[0]
    missing = [m.strip() for m in row["missing"].split(",") if m.strip()]
    if task not in html or not any(literal in html for literal in missing):
        raise BrowserError(f"the diff at {row['diff']} names neither {task} nor any of {missing}")
    browser.wait_for("document.body.innerText.includes('.html')", timeout_s=timeout_s, what="the artifact view")
    pages.append(Page("pair diff", row["diff"], str(browser.screenshot(out / "2-pair-diff.png"))))

    for index, role in ((3, "compressed"), (4, "full")):
        browser.open(row[role])
        root = f"episode {task} · "
        browser.wait_for(
            f"document.body.innerText.includes({json.dumps(root)})",
            timeout_s=timeout_s,
            what=f"the {role} trace of {task}",
        )
        pages.append(Page(f"{role} trace", row[role], str(browser.screenshot(out / f"{index}-{role}-trace.png"))))
    return pages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("job_dir", type=Path)
    parser.add_argument("--out", type=Path, default=Path("ui-screenshots"))
    args = parser.parse_args(argv)
    try:
        pages = walk(args.job_dir, args.out)
    except BrowserError as exc:
        print(f"ui_walk: {exc}", file=sys.stderr)
        return 1
    for page in pages:
        print(json.dumps(asdict(page)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
