"""The layout probe's texts and its read-outs, without a model: what it prints is what a person decides on."""

from __future__ import annotations

import pytest

from optimizer.context.summary_template import CLOSING_LEAD, MESSAGES_BLOCK, split_closing, summary_prompt
from optimizer.summary.contract_text import HEADER, learned_part
from optimizer.summary.screen import LostFact, ScreenResult, SummaryScore, TaskScreen
from tests.conftest import benchmark_module


@pytest.fixture(scope="module")
def probe():
    yield from benchmark_module("probe_summary_layout")


def test_the_line_against_repetition_goes_after_the_messages(probe):
    texts = probe.texts()
    opening, closing = split_closing(texts["seed+contract+once"])
    assert closing == f"{CLOSING_LEAD}\n{probe.ONCE}" and probe.ONCE not in opening
    assert split_closing(texts["seed+contract+remind+once"])[1] == f"{probe.REMIND} {probe.ONCE}"


def test_the_table_counts_looping_summaries_and_older_rows_without_the_count_still_print(probe):
    rows = {
        "new": {"kept": 3, "needed": 13, "visible": 0.5, "tokens": 434.7, "summaries": 9, "looped": 4},
        "old": {"kept": 1, "needed": 12, "visible": 0.0, "tokens": 117.0},
    }
    text = probe.table(rows)
    assert (
        "| new | 3 of 13 | 0.23 | 0.50 | 435 | 4 of 9 |" in text and "| old | 1 of 12 | 0.08 | 0.00 | 117 | - |" in text
    )


def test_the_table_counts_summaries_stating_values_no_message_held(probe):
    rows = {
        "new": {
            "kept": 12,
            "needed": 25,
            "visible": 0.5,
            "tokens": 339.0,
            "summaries": 18,
            "claimed": 0,
            "invented": 7,
        },
        "old": {"kept": 9, "needed": 25, "visible": 0.25, "tokens": 257.8, "summaries": 18, "claimed": 6},
    }
    lines = probe.table(rows).splitlines()
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    new, old = ([c.strip() for c in line.strip("|").split("|")] for line in lines[2:4])
    column = header.index("invented values")
    assert len(header) == len(new) == len(old)
    assert new[column] == "7 of 18" and old[column] == "-" and old[header.index("false claims")] == "6 of 18"


def test_a_screen_row_carries_the_invented_count(probe):
    invented = SummaryScore("t-1", 2, 1, 1, 40, (), "", (), ("RSV-12345",), ("- reserve_stock: RSV-12345",))
    honest = SummaryScore("t-1", 5, 1, 1, 40, (), "", (), (), ())
    row = probe.screen_row(ScreenResult((TaskScreen("t-1", (invented, honest), 3, 4, 1900),)))
    assert row["invented"] == 1 and row["claimed"] == 0 and row["summaries"] == 2


def test_each_losing_summary_is_shown_once_under_everything_it_lost(probe):
    def fact(literal: str, step: int) -> LostFact:
        return LostFact("t-1", step, "value", literal, "static", f"id: {literal}", f"summary at {step}")

    shown = probe.losses([fact("A-1", 2), fact("B-2", 2), fact("C-3", 5)])
    assert shown.count("summary at 2") == 1 and shown.count("summary at 5") == 1
    assert "--- t-1 step 2: lost value 'A-1' from 'id: A-1'; value 'B-2' from 'id: B-2'" in shown


def test_the_facts_first_text_asks_for_the_facts_before_progress_and_carries_the_contract(probe):
    text = probe.texts()["facts-first+contract"]
    assert text.index("VARIABLES:") < text.index("DONE:") < text.index("PROGRESS:")
    assert HEADER in text and text.index("PROGRESS:") < text.index(HEADER)


def test_the_rules_first_text_puts_rules_on_top_and_gives_no_example_kinds_to_fill_in(probe):
    text = probe.texts()["rules-first+contract"]
    assert text.index("RULES:") < text.index("VALUES:") < text.index("DONE:") < text.index("PROGRESS:")
    # the list a small model filled with made-up values under facts first
    assert "(order ids" in probe.FACTS_FIRST and "(" not in probe.RULES_FIRST and HEADER in text


def test_the_worked_example_follows_the_facts_first_sections_and_precedes_the_contract(probe):
    text = probe.texts()["facts-first+example+contract"]
    assert text.index("PROGRESS:") < text.index(probe.EXAMPLE) < text.index(HEADER)
    assert "made-up values" in probe.EXAMPLE  # so that a summary copying them is counted as inventing, not keeping


def test_the_table_shows_tier0_success_and_peak_only_where_the_reference_agent_ran(probe):
    rows = {
        "ran": {"kept": 6, "needed": 12, "visible": 0.5, "tokens": 403.5, "tier0_success": 0.375, "peak": 2139.4},
        "screened": {"kept": 1, "needed": 12, "visible": 0.0, "tokens": 117.0},
    }
    text = probe.table(rows)
    assert "| ran | 6 of 12 |" in text and text.splitlines()[2].endswith("| 0.38 | 2,139 |")
    assert text.splitlines()[3].endswith("| - | - |")


def test_the_knobs_are_the_config_targets_unless_asked(probe):
    from optimizer.config import load_experiment
    from tests.conftest import ROOT

    builtin = load_experiment(ROOT / "experiments" / "summary_builtin.toml").optimize.target
    assert probe.knobs(builtin, None, None) == (1500, 4)
    assert probe.knobs(builtin, 2400, 2) == (2400, 2)
    assert probe.knobs(None, None, None) == (2000, 4)


def test_each_rewording_of_facts_first_changes_one_line_and_no_instruction_word(probe):
    start = probe.texts()["facts-first+contract"]
    reworded = {name: text for name, text in probe.texts().items() if name.startswith("facts-first+contract~")}
    assert len(reworded) == len(probe.REWORDINGS)
    for text in reworded.values():
        changed = [(a, b) for a, b in zip(start.splitlines(), text.splitlines(), strict=True) if a != b]
        assert len(changed) == 1
        # The sections and the contract are untouched: only the wording around them moves.
        assert all(section in text for section in ("VARIABLES:", "DONE:", "ERRORS AND WARNINGS:", "PROGRESS:"))
        assert text.split("Always keep")[1] == start.split("Always keep")[1]


def screened(**kept_needed: tuple[int, int]) -> ScreenResult:
    """A screen with one summary per task keeping `kept` of `needed` facts."""
    return ScreenResult(
        tuple(
            TaskScreen(t, (SummaryScore(t, 1, needed, kept, 100),), 1, 1, 1000)
            for t, (kept, needed) in kept_needed.items()
        )
    )


def test_each_rewording_is_paired_with_its_own_text_and_each_candidate_with_its_parent(probe):
    screens = {
        "facts": screened(a=(2, 4), b=(1, 1), c=(0, 0)),
        "facts~1": screened(a=(1, 4), b=(0, 1), c=(0, 0)),
        "ut1": screened(a=(4, 4), b=(1, 1), c=(0, 0)),
        "lonely~2": screened(a=(0, 4)),  # its text was not screened: nothing to pair with
    }
    parents = probe.parents_of(list(screens), {"ut1": "facts", "co1": "facts"})
    assert parents == {"facts~1": "facts", "lonely~2": "lonely", "ut1": "facts"}  # co1 was not screened
    gaps = probe.against_parents(screens, parents)
    assert list(gaps) == ["facts~1", "ut1"]
    # a: 0.25 - 0.5, b: 0 - 1, c: no needed fact in either (1.0 - 1.0): the mean over 3 tasks
    gap = gaps["facts~1"]
    assert gap["vs"] == "facts" and gap["tasks"] == 3 and gap["mean"] == pytest.approx((-0.25 - 1.0 + 0.0) / 3)
    assert gap["low"] <= gap["mean"] <= gap["high"]
    assert gaps["ut1"]["mean"] == pytest.approx(0.5 / 3)


def test_a_recorded_search_gives_its_candidates_and_a_broken_file_one_line(probe, tmp_path):
    record = tmp_path / "bench.json"
    record.write_text(
        '{"search": {"candidates": [{"name": "start", "text": "Keep ids.", "parent": null},'
        ' {"name": "ut1", "text": "Keep ids. Keep rules.", "parent": "start"}]}}'
    )
    assert probe.recorded_search(record) == ({"start": "Keep ids.", "ut1": "Keep ids. Keep rules."}, {"ut1": "start"})
    record.write_text('{"rows": {}}')
    with pytest.raises(SystemExit, match=r"--search-from .*bench.json: no recorded search"):
        probe.recorded_search(record)


def test_unknown_names_and_a_record_that_rewrites_a_probe_text_are_refused_before_any_model(probe, tmp_path):
    with pytest.raises(SystemExit, match="--only: no text named nope"):
        probe.main(["--only", "nope"])
    record = tmp_path / "bench.json"
    record.write_text('{"search": {"candidates": [{"name": "facts-first+contract", "text": "else", "parent": null}]}}')
    with pytest.raises(SystemExit, match=r"facts-first\+contract differ from this probe's"):
        probe.main(["--search-from", str(record)])


def test_samples_of_one_task_pool_into_one_pair_and_one_row(probe):
    draws = ScreenResult(screened(a=(1, 4)).tasks + screened(a=(3, 4), b=(0, 2)).tasks)
    # a's two draws are one task: 4 of 8 facts, not a second pair that would narrow the interval by itself
    assert draws.kept_by_task() == {"a": 0.5, "b": 0.0}
    assert probe.by_task(draws) == {"a": [4, 8], "b": [0, 2]}
    gap = draws.gain_over(screened(a=(2, 4), b=(1, 2)))
    assert gap.tasks == 2 and gap.mean == pytest.approx((0.0 - 0.5) / 2)


def test_fewer_than_one_sample_is_refused_before_any_model(probe):
    with pytest.raises(SystemExit):
        probe.main(["--samples", "0", "--only", "default"])


def test_the_by_call_text_changes_only_the_values_section_and_the_progress_line(probe):
    texts = probe.texts()
    first, by_call = texts["facts-first+contract"].splitlines(), texts["facts-by-call+contract"].splitlines()
    changed = [(a, b) for a, b in zip(first, by_call, strict=True) if a != b]
    assert len(changed) == 3 and changed[0][0].startswith("VARIABLES:") and changed[2][0].startswith("PROGRESS:")
    assert changed[0][1].startswith("VALUES BY CALL:") and "under it each such line" in changed[1][1]
    assert changed[2][1].endswith("the tool to call next.")
    assert probe.parents_of(["facts-by-call+contract", "facts-first+contract"], {}) == {
        "facts-by-call+contract": "facts-first+contract"
    }


def test_a_text_from_a_file_is_screened_and_paired_with_the_named_parent(probe, tmp_path):
    (tmp_path / "mine.md").write_text("Keep every id the tools returned, word for word.\n")
    texts, parents = probe.given_texts([f"mine={tmp_path / 'mine.md'}"], "facts-first+contract")
    assert texts == {"mine": "Keep every id the tools returned, word for word.\n"}
    assert parents == {"mine": "facts-first+contract"}
    args = probe.argparse.Namespace(
        search_from=None, text=[f"mine={tmp_path / 'mine.md'}"], against="facts-first+contract", only=["default"]
    )
    chosen, paired = probe.chosen_texts(args)
    assert set(chosen) == {"default", "mine", "facts-first+contract"} and paired == {"mine": "facts-first+contract"}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--text", "nofile"], "expected NAME=FILE"),
        (["--text", "x=/nonexistent/mine.md"], "No such file"),
        (["--text", "default={empty}"], "the file is empty"),
        (["--text", "default={full}"], "default already names a text"),
        (["--text", "x={full}", "--against", "nope"], "--against: no text named nope"),
    ],
)
def test_a_bad_text_argument_is_refused_in_one_line_before_any_model(probe, tmp_path, argv, message):
    (tmp_path / "empty.md").write_text("  \n")
    (tmp_path / "full.md").write_text("Keep ids.\n")
    argv = [a.format(empty=tmp_path / "empty.md", full=tmp_path / "full.md") for a in argv]
    with pytest.raises(SystemExit, match=message):
        probe.main(argv)


def test_the_default_with_the_contract_keeps_langchains_text_and_one_messages_block(probe):
    default, both = probe.texts()["default"], probe.texts()["default+contract"]
    assert learned_part(both) == default.split(MESSAGES_BLOCK)[0].rstrip() and HEADER in both
    prompt = summary_prompt(both)
    assert prompt.count("{messages}") == 1 and prompt.endswith(MESSAGES_BLOCK)
    assert prompt.index(HEADER) > prompt.index("Respond ONLY with the extracted context")
    assert probe.parents_of(["default", "default+contract"], {}) == {"default+contract": "default"}
