"""compare_stores on three tiny stores written by the MLflow tracker: two alike but for what differs by
construction (ids, paths, times), one with a metric, an artifact, a trace and a run of its own."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from optimizer.tracking.mlflow_tracker import MlflowTracker
from optimizer.tracking.store import job_store
from tests.conftest import benchmark_module
from tests.tracking.conftest import make_episode, make_guideline


@pytest.fixture(scope="module")
def bench():
    yield from benchmark_module("compare_stores")


def write_job(job: Path, template: Path, *, success: float, wall_s: float, extra: bool = False) -> Path:
    """A job run with one evaluation (metrics, an episode table, a trace) and a report naming ids and paths."""
    job.mkdir(parents=True)
    shutil.copy(template, job / "mlflow.db")
    tracker = MlflowTracker(job_store(job), job, "compare", traces="all")
    with tracker.job_run("optimize", params={"seed": 0, "out": str(job)}, tags={"suite": "smoke"}) as parent:
        tracker.register_guideline(make_guideline(), tags={"acon.round": "0"})
        with (
            tracker.child_run("round/00", "seed"),
            tracker.child_run("eval/none-reference-train-abc", "none · reference · train") as child,
        ):
            tracker.set_tags({"acon.run_dir": str(job / "runs" / "none-reference-train-abc")})
            tracker.log_metrics({"success": success, "peak_tokens_mean": 160.0, "wall_s": wall_s})
            tracker.log_table([{"task": "t-1", "success": success, "wall_s": wall_s}], "tables/episodes.json")
            tracker.trace_episode(make_episode(outcome="success" if success else "failure"))
        if extra:
            with tracker.child_run("candidate/abc123", "mined: keep ids"):
                tracker.log_metrics({"screen_success": 1.0}, step=1)
        tracker.log_text(f"# Report\nbest run {child} of {parent}\nstore {job}\njob took {wall_s:.0f} s\n", "report.md")
        tracker.log_text(json.dumps({"success": success, "wall_s": wall_s, "dir": str(job)}), "report.json")
    return job


@pytest.fixture(scope="module")
def jobs(migrated_db, tmp_path_factory):
    root = tmp_path_factory.mktemp("jobs")
    return {
        "a": write_job(root / "a", migrated_db, success=1.0, wall_s=12.0),
        "a_again": write_job(root / "a_again", migrated_db, success=1.0, wall_s=31.0),
        "b": write_job(root / "b", migrated_db, success=0.0, wall_s=12.0, extra=True),
    }


def test_ids_paths_and_times_are_ignored(bench, jobs, tmp_path, capsys):
    out = tmp_path / "same.json"
    assert bench.main([str(jobs["a"]), str(jobs["a_again"]), "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["same"] is True
    assert result["table"]["eval"] == {"matched": 1, "only_a": 0, "only_b": 0, "differing": 0}
    assert result["table"]["job"]["matched"] == 1
    assert result["table"]["prompt"]["matched"] >= 1
    assert "stores: same" in capsys.readouterr().out


def test_a_changed_metric_artifact_trace_and_an_extra_run_are_found(bench, jobs, tmp_path):
    out = tmp_path / "differ.json"
    assert bench.main([str(jobs["a"]), str(jobs["b"]), "--out", str(out)]) == 1
    result = json.loads(out.read_text())
    assert result["only_b"] == ["candidate/abc123"]
    assert result["table"]["candidate"] == {"matched": 0, "only_a": 0, "only_b": 1, "differing": 0}
    fields = {d["field"]: d for d in result["differing"]["eval/none-reference-train-abc"]}
    assert fields["metrics.success"]["a"] == [[0, 1.0]] and fields["metrics.success"]["b"] == [[0, 0.0]]
    assert "artifacts.tables/episodes.json" in fields
    assert fields["traces"]["a"]["count"] == fields["traces"]["b"]["count"] == 1
    report = next(d for d in result["differing"]["job:optimize"] if d["field"] == "artifacts.report.json")
    changed = [line for line in report["diff"][2:] if line.startswith(("-", "+"))]
    assert changed == ['- "success": 1.0,', '+ "success": 0.0,']


def test_the_report_is_normalized_for_ids_paths_and_durations(bench, jobs):
    snapshot = bench.snapshot(jobs["a"])
    report = snapshot["job:optimize"]["artifacts"]["report.md"]
    assert "best run <run:eval/none-reference-train-abc> of <run:job:optimize>" in report
    assert "store <job>" in report and "took <duration>" in report
    assert json.loads(snapshot["job:optimize"]["artifacts"]["report.json"])["wall_s"] == "<duration>"
    assert snapshot["round/00"]["parent"] == "job:optimize"
    assert "wall_s" not in snapshot["eval/none-reference-train-abc"]["metrics"]
    assert not any(k.startswith("mlflow.source.") for k in snapshot["job:optimize"]["tags"])


def test_a_param_moved_with_its_value_is_one_rename_and_a_changed_one_stays_two(bench):
    moved = [{"field": "params.optimize.rounds", "a": "2", "b": None}]
    moved.append({"field": "params.optimize.budget.rounds", "a": None, "b": "2"})
    changed = [{"field": "params.optimize.lam", "a": "0.3", "b": None}]
    changed.append({"field": "params.optimize.selection.lam", "a": None, "b": "0.5"})
    rename = {"field": "params.optimize.rounds -> params.optimize.budget.rounds", "renamed": True, "value": "2"}
    assert bench.renamed(moved + changed) == [rename, *changed]


def test_pair_link_rows_of_the_description_compare_in_any_order_and_other_lines_in_theirs(bench):
    rows = [
        "| a · seed | failed | [full](#/experiments/1/traces/<trace>) |",
        "| b · seed | near miss | [full](#/experiments/1/traces/<trace>) |",
    ]
    text = "# Job\n| pair | kind | traces |\n|---|---|---|\n{}\n{}\nchosen: seed\nsecond line"
    assert bench._trace_rows_sorted(text.format(*rows)) == bench._trace_rows_sorted(text.format(*reversed(rows)))
    assert bench._trace_rows_sorted(text.format(*rows)).endswith("chosen: seed\nsecond line")
    swapped = "# Job\nchosen: seed\n| pair | kind | traces |"
    assert bench._trace_rows_sorted(swapped) != bench._trace_rows_sorted(
        "chosen: seed\n# Job\n| pair | kind | traces |"
    )


def test_html_diff_anchors_numbered_by_the_process_are_ignored_and_their_content_is_not(bench, tmp_path):
    import difflib

    normalize = bench.Normalizer(tmp_path)
    first = difflib.HtmlDiff().make_file(["a", "b"], ["a", "c"])
    difflib.HtmlDiff().make_file(["x"], ["y"])  # the process made another diff in between: the counter moved on
    again = difflib.HtmlDiff().make_file(["a", "b"], ["a", "c"])
    other = difflib.HtmlDiff().make_file(["a", "b"], ["a", "d"])
    assert first != again
    assert normalize.artifact("pairs/t.html", first.encode()) == normalize.artifact("pairs/t.html", again.encode())
    assert normalize.artifact("pairs/t.html", first.encode()) != normalize.artifact("pairs/t.html", other.encode())
