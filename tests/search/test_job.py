"""The optimization job on the built-in suite with scripted models: warm start with every baseline, rounds
of proposers, selection on the validation split, the test-split report; and resume."""

from __future__ import annotations

import json

import pytest

from optimizer.errors import ConfigError
from optimizer.report.file import read_report
from optimizer.search.job import OptimizationJob, split_validation
from optimizer.search.state import JobDir
from tests.conftest import job_config

WARM = ("none", "fifo", "mask_last_n", "clear_tool_uses", "offload_preview")


@pytest.fixture(scope="module")
def finished(tmp_path_factory, scripted_url):
    tmp = tmp_path_factory.mktemp("job")
    config = job_config(tmp, scripted_url, train_limit=12)
    job = OptimizationJob(config, log=lambda m: None)
    report = job.run()
    return config, report, JobDir(config.out_dir).load_state()


def test_report_rows_stand_on_the_same_test_tasks(finished):
    config, report, _ = finished
    assert report.chosen.row is not None and report.rounds and report.budget and report.tier0_limits
    rows = {r.strategy: r for r in report.rows}
    assert {"chosen", "seed", "none", "fifo", "oracle"} <= set(rows)
    assert {r.figures.tasks for r in report.rows} == {4}
    assert rows["oracle"].kind == "oracle" and rows["oracle"].figures.success == 1.0
    assert rows["oracle"].figures.peak_tokens_mean <= rows["chosen"].figures.peak_tokens_mean
    assert report.paired["none"].tasks == 4
    assert (config.out_dir / "report.md").read_text().startswith("# acon optimize")
    assert read_report(config.out_dir / "report.json") == report


def test_every_baseline_is_a_candidate_from_the_start(finished):
    _, _, state = finished
    origins = {c.origin for c in state.candidates.values() if c.round == 0}
    assert {f"baseline:{name}" for name in WARM} | {"seed"} <= origins
    for c in state.candidates.values():
        if c.origin.startswith("baseline:"):
            assert "train" in c.screens and c.screens["train"].n == 8  # 12 train tasks, 4 held out
            assert not c.guideline.policy.unpinned_required()  # pinned, so children pass the validator


def test_rounds_mine_pairs_and_near_misses_and_run_every_deterministic_proposer(finished):
    config, _, state = finished
    assert state.rounds and state.rounds[0].pairs > 0
    diffs = json.loads((config.out_dir / "rounds" / "01" / "diffs.json").read_text())
    facts = [f for d in diffs for f in d["missing"]]
    assert facts and all(f["checkpoint"] in (2, 3, 4, 5, None) for f in facts)
    origins = {c.origin for c in state.candidates.values() if c.round >= 1}
    assert {"patch", "graft", "tighten"} <= origins
    for c in state.candidates.values():
        if c.round >= 1 and not c.rejected:
            assert c.rationale and ("train" in c.screens or "subset" in c.screens), c.origin
    failed = [json.loads(p.read_text()) for p in config.out_dir.glob("rounds/*/proposals/*-llm_rewrite.json")]
    assert failed and all(p["error"] for batch in failed for p in batch)  # the scripted optimizer says "n/a"


def test_the_guideline_is_chosen_on_the_validation_split_and_beats_every_shortlisted_one_there(finished):
    _, report, state = finished
    chosen = state.candidates[state.chosen]
    assert "val" in chosen.screens and state.chosen in state.shortlist
    none_val = next(s for s in report.shortlist if s.version == "none")
    tolerance = 0.05
    feasible = [
        state.candidates[v].screens["val"]
        for v in state.shortlist
        if state.candidates[v].screens["val"].success >= none_val.figures.success - tolerance
    ]
    if feasible:  # the constrained objective: lowest peak among those within the tolerance of `none`
        assert chosen.screens["val"] in feasible
        assert chosen.screens["val"].peak_mean == min(s.peak_mean for s in feasible)
    assert report.chosen.version == state.chosen


def test_the_validation_split_is_held_out_of_mining():
    from optimizer.config import load_experiment  # noqa: F401 - the split is a pure function

    class T:
        def __init__(self, i):
            self.id = f"t{i}"

    tasks = [T(i) for i in range(30)]
    mined, held = split_validation(tasks, 0.34, seed=0)
    assert len(held) == 10 and not {t.id for t in mined} & {t.id for t in held}
    assert split_validation(tasks, 0.34, seed=0)[1] == held and split_validation(tasks, 0.0, 0) == (tasks, [])


def test_the_state_clock_counts_the_report(finished):
    # The report's wall time is read when it is built, after the test rows; the state's clock once stopped at
    # the checkpoint before them, so a job's phases did not add up to its wall time.
    _, report, state = finished
    assert state.wall_s >= report.wall_s > 0


def test_rerunning_a_finished_job_needs_resume(finished):
    config, _, _ = finished
    with pytest.raises(ConfigError, match="--resume"):
        OptimizationJob(config, log=lambda m: None)


def test_resume_on_a_different_config_is_refused(finished):
    config, _, _ = finished
    with pytest.raises(ConfigError, match="different config"):
        OptimizationJob(config.model_copy(update={"seed": 99}), resume=True, log=lambda m: None)


def test_resuming_a_finished_job_redoes_nothing(finished):
    config, report, _ = finished
    logs = sorted(config.out_dir.glob("runs/*/episodes.jsonl"))
    before = {p: p.read_text() for p in logs}
    again = OptimizationJob(config, resume=True, log=lambda m: None).run()
    assert {p: p.read_text() for p in logs} == before
    assert again.chosen.version == report.chosen.version
    assert again.budget == report.budget


def test_a_job_directory_of_another_state_format_is_refused_in_one_line(tmp_path, scripted_url):
    config = job_config(tmp_path, scripted_url)
    config.out_dir.mkdir(parents=True)
    OptimizationJob(config, log=lambda m: None)  # claims the directory
    (config.out_dir / "state.json").write_text(json.dumps({"current": "abc", "candidates": {}}))
    with pytest.raises(ConfigError, match="state format 1"):
        OptimizationJob(config, resume=True, log=lambda m: None)


def test_gepa_search_runs_on_the_same_evaluator_and_budget(tmp_path, scripted_url):
    config = job_config(tmp_path, scripted_url, search="gepa", gepa={"metric_calls": 12}, train_limit=5, test_limit=2)
    report = OptimizationJob(config, log=lambda m: None).run()
    state = JobDir(config.out_dir).load_state()
    assert "GEPA used its budget of 12" in state.stopped
    assert state.rounds[0].screened  # GEPA's best, screened like any candidate (it may be the seed's texts)
    assert (config.out_dir / "gepa").is_dir()
    assert report.budget is not None and report.budget.optimizer_tokens > 0  # GEPA's reflection calls are accounted


def test_the_llm_subset_is_never_empty_when_every_task_is_large():
    from optimizer.evaluate.scores import Scores, TaskScore
    from optimizer.search.job import affordable_tasks

    none = Scores(tuple(TaskScore(f"t{i}", True, peak) for i, peak in enumerate((9000, 2100, 5000, 3000))))
    assert affordable_tasks(none, 4000) == {"t1", "t3"}
    assert affordable_tasks(none, 1500) == set()  # nothing asked for, nothing given
    assert affordable_tasks(none, 1500, at_least=2) == {"t1", "t3"}  # the smallest, not the whole split
    assert affordable_tasks(none, 2500, at_least=2) == {"t1", "t3"}


def test_the_llm_subset_takes_each_family_in_turn():
    from optimizer.search.task_order import across_families

    # ordered by the best model-free candidate: every gift task peaks highest, but a compressor call may
    # fire only on the other families, so a subset of gift tasks alone would screen an LLM move unseen
    ordered = ["gift-1", "gift-2", "gift-3", "restock-1", "restock-2", "fix-1"]
    families = {t: t.split("-")[0] for t in ordered}
    assert across_families(ordered, families)[:4] == ["gift-1", "restock-1", "fix-1", "gift-2"]
    assert sorted(across_families(ordered, families)) == sorted(ordered)
    assert across_families(ordered, {}) == ordered  # no families: the order as given


def test_a_guideline_learned_elsewhere_starts_the_search_as_it_is(tmp_path, scripted_url):
    from optimizer.context.guideline import read_guideline

    shipped = "guidelines/learned/builtin.md"
    config = job_config(tmp_path, scripted_url, train_limit=6, warm_start=["none", shipped], budget={"rounds": 1})
    OptimizationJob(config, log=lambda m: None).run()
    state = JobDir(config.out_dir).load_state()
    started = next(c for c in state.candidates.values() if c.origin == f"baseline:{shipped}")
    assert started.round == 0 and "train" in started.screens
    assert started.guideline.texts == read_guideline(shipped).texts and started.guideline.name != "guideline"


def test_a_missing_guideline_file_to_start_from_stops_the_job_before_it_claims_a_directory(tmp_path, scripted_url):
    config = job_config(tmp_path, scripted_url, warm_start=["guidelines/learned/nope.md"])
    with pytest.raises(ConfigError, match=r"guideline file not found: guidelines/learned/nope\.md"):
        OptimizationJob(config, log=lambda m: None)
    assert not config.out_dir.exists()
