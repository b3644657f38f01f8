"""The parent run's description: pure text from the report and the pairs marked on traces."""

from __future__ import annotations

from dataclasses import replace

from optimizer.report.checks import Acceptance, BarCheck, TierVerdict
from optimizer.report.model import ChosenGuideline
from optimizer.tracking.front_page import MAX_CHARS, PairLink, artifact_url, description, trace_url
from tests.search.report_samples import full_report

REPORT = replace(
    full_report(),
    experiment="quickstart",
    chosen=ChosenGuideline("abc", "seed+lower", "tighten", round=1),
    rows=(),
    best_baseline=None,
    cut=None,
    mlflow={},
    wall_s=61.0,
    acceptance=Acceptance(
        declared={},
        tiers={"tier0": TierVerdict("builtin", {"peak_reduction": BarCheck(0.2, 0.3, False)}, False)},
        passed=False,
    ),
)


def link(task: str, near_miss: bool = False, strategy: str = "guideline:seed@abc") -> PairLink:
    return PairLink(
        f"{task} · {strategy}",
        "SKU-42278",
        "history as written",
        f"tr-{task}",
        f"tr-{task}-full",
        "round-run",
        f"pairs/r01/{task}.html",
        near_miss=near_miss,
    )


def test_failed_pairs_come_first_each_linked_to_its_diff_and_both_traces():
    text = description(REPORT, [link("a", near_miss=True), link("b")], experiment_id="7", run_id="parent")
    rows = [line for line in text.splitlines() if line.startswith("| ") and "·" in line]
    assert rows[0].startswith("| b · guideline:seed@abc | failed | SKU-42278 | history as written |")
    assert f"[diff]({artifact_url('7', 'round-run', 'pairs/r01/b.html')})" in rows[0]
    assert f"[compressed]({trace_url('7', 'tr-b')}) · [full]({trace_url('7', 'tr-b-full')})" in rows[0]
    assert "| near miss |" in rows[1]
    assert "tier0: FAIL: peak_reduction: 0.200 (bar 0.3) FAIL" in text and "**Wall time:** 1 min 1 s." in text
    assert "#/experiments/7/runs/parent/artifactPath/report.md" in text


def test_the_chosen_guidelines_pairs_come_before_the_baselines():
    pairs = [link("a", strategy="fifo"), link("b", near_miss=True, strategy="guideline:seed+lower@abc"), link("c")]
    pairs.append(link("d", strategy="guideline:seed+lower@abc"))
    text = description(REPORT, pairs, experiment_id="7", run_id="parent")
    rows = [line.split(" | ")[0] for line in text.splitlines() if line.startswith("| ") and "·" in line]
    assert rows == [
        "| d · guideline:seed+lower@abc",
        "| b · guideline:seed+lower@abc",
        "| a · fifo",
        "| c · guideline:seed@abc",
    ]


def test_pairs_that_do_not_fit_in_one_tag_are_counted_not_cut_mid_row():
    pairs = [link(f"task-{i:03d}") for i in range(200)]
    text = description(REPORT, pairs, experiment_id="7", run_id="parent")
    assert len(text) <= MAX_CHARS
    shown = sum(1 for line in text.splitlines() if line.startswith("| task-"))
    assert 0 < shown < 200 and f"{200 - shown} more pair(s) did not fit here" in text
    assert (
        description(REPORT, [], experiment_id="7", run_id="p")
        .rstrip()
        .endswith("no candidate lost a task that full context solved.")
    )
