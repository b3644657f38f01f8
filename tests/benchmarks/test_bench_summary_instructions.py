"""The summary-instruction benchmark's plumbing on the scripted stand-in (no model): the split it learns and
chooses on, the rows it writes, and the tier-1 columns of its table."""

from __future__ import annotations

import json

import pytest

from tests.conftest import ROOT, benchmark_module

CONFIG = ROOT / "experiments" / "summary_reach_long.toml"


@pytest.fixture(scope="module")
def bench():
    yield from benchmark_module("bench_summary_instructions")


def family(task_id: str) -> str:
    return task_id.rsplit("-", 1)[0]


def test_the_choice_is_made_on_more_than_one_family(bench, tmp_path):
    out = tmp_path / "summary.json"
    argv = ["--config", str(CONFIG), "--learn", "8", "--limit", "4", "--trigger", "2000", "--scripted"]
    assert bench.main([*argv, "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    tasks = report["tasks"]
    assert len(tasks["mine"]) == 6 and len({family(t) for t in tasks["choose"]}) == 2
    assert not set(tasks["figure_ids"]) & set(tasks["mine"] + tasks["choose"])
    builtin = "guidelines/learned/builtin.md"
    assert list(report["rows"]) == ["none", "default", "seed", "seed+contract", "learned", "oracle", builtin]
    # The deterministic rows run the same tasks at tier 0, with no summary to score, and are compared against.
    assert "facts_kept" not in report["rows"][builtin] and report["rows"]["oracle"]["tier0_success"] == 1.0
    assert set(report["paired"][f"learned-{builtin}"]) == {"tier0_success"}
    assert report["tier1"] == "not run" and "tier-1" not in out.with_suffix(".md").read_text()
    # The scripted summarizer keeps the lines the instructions name: the seed's text names more kinds than
    # LangChain's default, so the rows must differ, or the screen is not reading the summaries.
    assert report["rows"]["seed+contract"]["facts_kept"] > report["rows"]["default"]["facts_kept"]


def test_a_summarizer_model_and_penalty_are_sent_and_recorded(bench, tmp_path, monkeypatch):
    sent = []
    responder = bench.scripted_responder
    monkeypatch.setattr(bench, "scripted_responder", lambda request: sent.append(request) or responder(request))
    out = tmp_path / "summary.json"
    argv = ["--config", str(CONFIG), "--learn", "4", "--limit", "1", "--trigger", "2000", "--scripted"]
    assert bench.main([*argv, "--frequency-penalty", "0.5", "--summarizer", "m-1.5b", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["summarizer_sampling"] == {"temperature": 0.0, "samples": 1, "frequency_penalty": 0.5}
    assert report["summarizer"] == "m-1.5b"
    assert sent and all(r.get("frequency_penalty") == 0.5 for r in sent)


def test_a_summary_cap_bounds_every_summary_row_and_is_recorded(bench, tmp_path, monkeypatch):
    from optimizer.context.thresholds import SUMMARY_MAX_TOKENS

    sent = []
    responder = bench.scripted_responder
    monkeypatch.setattr(bench, "scripted_responder", lambda request: sent.append(request) or responder(request))
    argv = ["--config", str(CONFIG), "--learn", "4", "--limit", "1", "--trigger", "2000", "--rounds", "0"]
    out = tmp_path / "summary.json"
    assert bench.main([*argv, "--summary-max-tokens", "180", "--baselines", "", "--scripted", "--out", str(out)]) == 0
    summaries = [r for r in sent if r.get("max_tokens") in (180, SUMMARY_MAX_TOKENS)]
    assert summaries and all(r["max_tokens"] == 180 for r in summaries)
    assert json.loads(out.read_text())["knobs"]["summary_max_tokens"] == 180


def test_a_baseline_that_cannot_be_read_stops_the_run_before_any_model_starts(bench, capsys):
    with pytest.raises(SystemExit) as exit_:
        bench.main(["--config", str(CONFIG), "--baselines", "oracle,guidelines/learned/nope.md", "--scripted"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "--baselines: guideline file not found" in err


def test_tier1_needs_a_real_agent(bench, capsys):
    with pytest.raises(SystemExit) as exit_:
        bench.main(["--config", str(CONFIG), "--tier1", "2", "--scripted"])
    assert exit_.value.code == 2 and "--tier1 and --confirm run the real agent" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        bench.main(["--config", str(CONFIG), "--confirm", "2", "--scripted"])
    assert exit_.value.code == 2


def tier1_report(tier1: dict, rows: dict, paired: dict) -> dict:
    """A report with tier-1 rows, as `table` reads it."""
    head = {"suite": "reach_long", "target": "langchain", "split": "val", "model": "m", "scripted": False}
    return head | {"tier1": tier1, "rows": rows, "paired": paired}


def test_the_table_shows_tier1_columns_and_intervals(bench):
    row = {"tier0_success": 1.0, "peak_mean": 3000.0, "tier1_success": 0.75, "tier1_peak_mean": 2900.0}
    summarized = row | {
        "facts_kept": 3,
        "facts_needed": 4,
        "facts_kept_per_summary": 0.5,
        "summary_tokens_mean": 120,
        "summaries": 2,
        "summaries_looped": 1,
        "summaries_claiming": 2,
        "summaries_inventing": 1,
    }
    interval = {"mean": 0.25, "low": 0.0, "high": 0.5}
    paired = {"learned-none": {"tier1_success": interval}}
    failing = summarized | {"tier1_failures": {"step limit": 1, "no answer": 1}}
    text = bench.table(tier1_report({"tasks": 4}, {"none": row, "learned": failing}, paired))
    assert "| tier-1 success (4 tasks) | tier-1 mean peak |" in text
    assert "| learned | 3/4 | 0.50 | 1 of 2 | 2 of 2 | 1 of 2 | 1.00 | 120 | 3000 | 0.75 | 2900 |" in text
    assert "| none | - | - | - | - | - | 1.00 | - | 3000 | 0.75 | 2900 |" in text
    assert "learned-none: tier-1 success +0.25 [+0.00, +0.50]" in text
    assert "each cause (an episode may show several):\n  learned: step limit 1, no answer 1\n" in text


def scripted_at_2000(bench, tmp_path, *extra: str) -> tuple[dict, str]:
    """The scripted benchmark on 4 + 2 tasks at trigger 2,000, starts only, no baselines: its JSON and table."""
    out = tmp_path / "summary.json"
    argv = ["--config", str(CONFIG), "--learn", "4", "--limit", "2", "--trigger", "2000", "--rounds", "0"]
    assert bench.main([*argv, *extra, "--baselines", "", "--scripted", "--out", str(out)]) == 0
    return json.loads(out.read_text()), out.with_suffix(".md").read_text()


def test_with_triggers_the_rows_run_at_the_chosen_one_beside_both_texts_at_the_asked_one(bench, tmp_path):
    report, table = scripted_at_2000(bench, tmp_path, "--triggers", "3000")
    choice = report["trigger_choice"]
    assert choice["asked"] == 2000 and choice["judged_by"] == "tier 0 on the 1 choice task(s)"
    assert [t["trigger"] for t in choice["trials"]] == [2000, 3000]
    best = max(choice["trials"], key=lambda t: (t["success"], -t["peak_mean"], t["trigger"] == 2000))
    assert choice["chosen"] == best["trigger"] == report["knobs"]["trigger"]
    rows = report["rows"]
    assert list(rows) == ["none", "default", "seed", "seed+contract", "learned", "learned@2000", "default@2000"]
    # The same text at two triggers is two rows that differ, or the asked-trigger rows are not what they say.
    assert (rows["learned"]["summaries"], rows["learned"]["peak_mean"]) != (
        rows["learned@2000"]["summaries"],
        rows["learned@2000"]["peak_mean"],
    )
    assert {"learned-learned@2000", "learned-default@2000"} <= set(report["paired"])
    assert f"trigger {choice['chosen']:,} chosen (asked 2,000)" in table


@pytest.mark.parametrize("flag", ["--triggers", "--default-triggers"])
def test_triggers_must_be_whole_positive_numbers(bench, capsys, flag):
    for bad in ("3000,x", "0"):
        with pytest.raises(SystemExit) as exit_:
            bench.main(["--config", str(CONFIG), flag, bad, "--scripted"])
        assert exit_.value.code == 2 and f"{flag}:" in capsys.readouterr().err


def test_the_default_at_equal_peak_is_the_lowest_default_row_peaking_as_high_as_learned(bench):
    def peaks(tier0: float, tier1: float | None = None) -> dict:
        return {"peak_mean": tier0} | ({} if tier1 is None else {"tier1_peak_mean": tier1})

    rows = {
        "none": peaks(2990, 3629),
        "default": peaks(1825, 2043),
        "learned": peaks(2022, 2305),
        "default@2800": peaks(2300, 2600),
        "default@2400": peaks(2060),
        "learned@2000": peaks(2100),
    }
    assert bench.equal_peak_default(rows, "tier0") == "default@2400"
    assert bench.equal_peak_default(rows, "tier1") == "default@2800"  # default@2400 has no tier-1 run
    del rows["default@2800"]
    assert bench.equal_peak_default(rows, "tier1") is None and bench.equal_peak_default({}, "tier0") is None


def test_default_rows_at_other_triggers_are_compared_with_learned_at_equal_peak(bench, tmp_path):
    # 2,000 is where the rows ran: the `default` row is the default there, and no second row repeats it.
    report, table = scripted_at_2000(bench, tmp_path, "--default-triggers", "2000,4000")
    rows = report["rows"]
    assert "default@2000" not in rows
    assert list(rows)[-1] == "default@4000" and "learned-default@4000" in report["paired"]
    assert rows["default@4000"]["peak_mean"] > rows["default"]["peak_mean"]  # a later trigger holds more context
    matched = report["equal_peak"]["tier0"]
    assert matched in rows and rows[matched]["peak_mean"] >= rows["learned"]["peak_mean"]
    assert report["equal_peak"]["tier1"] is None
    assert f"at equal peak (tier 0): learned {rows['learned']['tier0_success']:.2f}" in table


def test_the_search_can_start_from_another_seed_and_the_file_names_it(bench, tmp_path, capsys):
    from optimizer.context.guideline import SEED_GUIDELINE, read_guideline

    plain = read_guideline(SEED_GUIDELINE).model_copy(update={"history": "Summarize; keep every id as written."})
    (tmp_path / "plain.md").write_text(plain.to_markdown())
    argv = ["--config", str(CONFIG), "--learn", "4", "--limit", "1", "--trigger", "2000", "--rounds", "0"]
    out = tmp_path / "summary.json"
    assert (
        bench.main([*argv, "--seed", str(tmp_path / "plain.md"), "--baselines", "", "--scripted", "--out", str(out)])
        == 0
    )
    report = json.loads(out.read_text())
    assert report["texts"]["seed"] == "Summarize; keep every id as written."
    assert report["texts"]["seed+contract"].startswith("Summarize; keep every id as written.\n\nAlways keep")
    assert report["seed_file"] == str(tmp_path / "plain.md")
    with pytest.raises(SystemExit) as exit_:
        bench.main([*argv, "--seed", str(tmp_path / "nope.md"), "--scripted"])
    assert exit_.value.code == 2 and "--seed: guideline file not found" in capsys.readouterr().err


def test_paraphrases_are_tried_recorded_and_name_the_file(bench, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(bench, "ROOT", tmp_path)  # the default out path, under a throwaway root
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    argv = ["--config", str(CONFIG), "--learn", "4", "--limit", "1", "--trigger", "2000", "--candidates", "0"]
    assert bench.main([*argv, "--paraphrases", "1", "--baselines", "", "--scripted"]) == 0
    out = tmp_path / "benchmarks" / "results" / "summary_instructions_reach_long_langchain_pp1_val_scripted.json"
    attempts = json.loads(out.read_text())["search"]["attempts"]
    said = [a for a in attempts if a["step"] == "paraphrase"]
    # The stand-in says "each" for "every": the same facts kept, so the paraphrase is screened and dropped.
    assert len(said) == 1 and said[0]["replaces"].startswith("VARIABLES:") and said[0]["llm_lines"]
    assert said[0]["verdict"].startswith("dropped: not clearly better than its parent on train (+0.00")
    table = out.with_suffix(".md").read_text()
    assert 'sentences the optimizer said otherwise:\n  pp1.0: "VARIABLES: every identifier' in table
    assert '-> "VARIABLES: each identifier' in table
    with pytest.raises(SystemExit) as exit_:
        bench.main([*argv, "--paraphrases", "-1", "--scripted"])
    assert exit_.value.code == 2 and "--paraphrases must be 0 or more" in capsys.readouterr().err


def test_tier1_over_seeds_pairs_tasks_by_their_share_of_seeds_solved(bench):
    from types import SimpleNamespace

    from optimizer.evaluate.scores import Scores, TaskScore

    won = {(1, "a"): True, (1, "b"): False, (2, "a"): False, (2, "b"): False}
    seen = []

    class Evaluator:
        def evaluate(self, strategy, tasks, split, agent, seed, temperature):
            seen.append(seed)
            scored = [
                TaskScore(t, won[seed, t], 1000 * seed, causes=() if won[seed, t] else ("step limit",)) for t in tasks
            ]
            return SimpleNamespace(scores=Scores(tuple(scored)), episodes=[])

    result = bench.tier1(Evaluator(), None, ["a", "b"], "train", seeds=2)
    assert seen == [1, 2]
    assert result["tier1_by_task"] == {"a": 0.5, "b": 0.0}
    assert result["tier1_success"] == 0.25 and result["tier1_episodes"] == 4 and result["tier1_peak_mean"] == 1500
    assert result["tier1_failures"] == {"step limit": 3}
    assert result["tier1_summaries"] == 0 and result["tier1_restating"] == 0


def test_tier1_seeds_must_be_positive_and_show_in_the_header(bench, capsys):
    with pytest.raises(SystemExit) as exit_:
        bench.main(["--config", str(CONFIG), "--tier1-seeds", "0", "--scripted"])
    assert exit_.value.code == 2 and "--tier1-seeds must be at least 1" in capsys.readouterr().err
    row = {"tier0_success": 1.0, "peak_mean": 3000.0, "tier1_success": 0.5, "tier1_peak_mean": 2900.0}
    report = tier1_report({"tasks": 6, "seeds": 2}, {"none": row}, {})
    assert "| tier-1 success (6 tasks x 2 seeds) |" in bench.table(report)


def test_the_peak_goal_is_a_token_count_or_the_default_texts_own(bench, capsys):
    assert bench._peak_goal("default") == "default" and bench._peak_goal("2176") == 2176
    for bad in ("lowest", "0", "-5"):
        with pytest.raises(SystemExit) as exit_:
            bench.main(["--config", str(CONFIG), "--triggers", "1800", "--max-peak", bad, "--scripted"])
        assert exit_.value.code == 2 and "--max-peak" in capsys.readouterr().err


def test_each_tier1_episode_prints_one_line_as_it_ends(bench, capsys):
    class Metrics:
        peak_tokens = 2043

    class Ended:
        def __init__(self, task_id: str, success: bool) -> None:
            self.task_id, self.success, self.metrics = task_id, success, Metrics()

    with bench.episode_lines("default [llm, train, 2 tasks, seed 1]", 2) as advance:
        advance(Ended("t-1", False))
        advance(Ended("t-2", True))
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("    default [llm, train, 2 tasks, seed 1]: 1 of 2, 0 solved (t-1 failed, peak 2,043;")
    assert "2 of 2, 1 solved (t-2 solved" in lines[1]


def test_a_test_figure_writes_no_task_id_of_the_sealed_split(bench, tmp_path):
    from optimizer.config import load_experiment
    from optimizer.evaluate.strategy_runs import select_tasks

    out = tmp_path / "summary.json"
    argv = ["--config", str(CONFIG), "--learn", "4", "--limit", "3", "--trigger", "2000", "--split", "test"]
    assert bench.main([*argv, "--scripted", "--out", str(out)]) == 0
    sealed_ids = [t.id for t in select_tasks(load_experiment(CONFIG), "test", None)]
    written = out.read_text() + out.with_suffix(".md").read_text()
    assert sealed_ids and not [task_id for task_id in sealed_ids if task_id in written]
    report = json.loads(out.read_text())
    failures = {key for r in report["rows"].values() for key in r["failures"]}
    assert failures and failures <= {"task 1", "task 2", "task 3"}


def test_sealing_keeps_the_rows_paired_by_the_place_of_each_task(bench):
    rows = {
        "none": {"tier1_by_task": {"a": 1.0, "b": 0.0}, "failures": {"b": ["x"]}},
        "learned": {"tier1_by_task": {"a": 0.0, "b": 1.0}, "failures": {"a": ["y"]}},
    }
    out = bench.sealed(rows, ["a", "b"])
    assert out["none"] == {"tier1_by_task": {"task 1": 1.0, "task 2": 0.0}, "failures": {"task 2": ["x"]}}
    assert out["learned"]["tier1_by_task"] == {"task 1": 0.0, "task 2": 1.0}
    assert rows["none"]["failures"] == {"b": ["x"]}  # the run's own rows are not rewritten under it


def test_the_test_figure_is_taken_in_family_turns_as_the_validation_figure_is(bench):
    from optimizer.config import load_experiment
    from optimizer.evaluate.strategy_runs import select_tasks
    from optimizer.search.task_order import spread

    config = load_experiment(CONFIG)
    train_all = spread(select_tasks(config, "train", None))
    families = {
        split: {family(t.id) for t in bench.figure_tasks(config, split, train_all, 8, 4)} for split in ("val", "test")
    }
    assert len(families["val"]) == len(families["test"]) == 4
    assert len(bench.figure_tasks(config, "test", train_all, 8, 10)) == 10


def test_the_start_gets_its_own_row_only_when_the_optimizers_lines_changed_it(bench):
    from types import SimpleNamespace

    from optimizer.summary.defaults import target_default

    plan = SimpleNamespace(default=target_default("langchain"), seed_text="Summarize.")

    def record(start: str, learned: str):
        texts = {"facts-first+contract": "Facts first.", "seed+contract": "Summarize. +contract"}
        return SimpleNamespace(
            start=start, best=lambda: SimpleNamespace(text=learned), named=lambda n: SimpleNamespace(text=texts[n])
        )

    assert "facts-first+contract" not in bench.texts_of(plan, record("facts-first+contract", "Facts first."))
    lined = bench.texts_of(plan, record("facts-first+contract", "Facts first. Keep ids."))
    assert lined["facts-first+contract"] == "Facts first." and lined["learned"] == "Facts first. Keep ids."
    assert set(bench.texts_of(plan, record("seed+contract", "Summarize. +contract"))) == {
        "default",
        "seed",
        "seed+contract",
        "learned",
    }


def test_samples_screen_and_run_every_row_once_per_draw_and_name_the_file(bench, tmp_path, capsys):
    argv = ["--config", str(CONFIG), "--learn", "4", "--limit", "2", "--trigger", "2000", "--baselines", ""]
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    assert bench.main([*argv, "--temperature", "0.7", "--scripted", "--out", str(one)]) == 0
    assert bench.main([*argv, "--temperature", "0.7", "--samples", "2", "--scripted", "--out", str(two)]) == 0
    once, twice = json.loads(one.read_text()), json.loads(two.read_text())
    assert twice["summarizer_sampling"] == {"temperature": 0.7, "samples": 2}
    # The scripted summarizer answers every seed alike: each draw folds and keeps the same facts.
    for name in ("default", "learned"):
        assert twice["rows"][name]["facts_needed"] == 2 * once["rows"][name]["facts_needed"]
        assert twice["rows"][name]["tier0_success"] == once["rows"][name]["tier0_success"]
    assert twice["paired"]["learned-default"] == once["paired"]["learned-default"]  # pairs stay one per task
    named = bench._out_path(bench._parser().parse_args([*argv, "--temperature", "0.7", "--samples", "2"]), "reach_long")
    assert named.name.endswith("_t0.7_x2_val.json")
    with pytest.raises(SystemExit):
        bench.main([*argv, "--samples", "2", "--scripted"])  # the config's summarizer runs at temperature 0
    assert "needs a summarizer temperature above 0" in capsys.readouterr().err


def test_tier0_success_is_pooled_per_task_over_draws(bench):
    from types import SimpleNamespace

    def episode(task_id: str, success: bool):
        metrics = SimpleNamespace(peak_tokens=100, recall_calls=0, compressor_calls=1, facts_needed=1, facts_visible=1)
        return SimpleNamespace(task_id=task_id, success=success, outcome="success", metrics=metrics, reasons=[])

    draws = [episode("a", True), episode("b", False), episode("a", False), episode("b", False)]
    assert bench.success_by_task(draws) == [0.5, 0.0]
