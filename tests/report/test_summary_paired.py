"""The summary job's report pairs learned against each baseline per task, at tier 1 too when both rows ran the real
agent, with every seed of a task counted as that task's share."""

from __future__ import annotations

import dataclasses

from optimizer.evaluate.scores import Scores, TaskScore
from optimizer.report.summary import SummaryReport, TextRow
from optimizer.summary.search import Candidate, SearchRecord


def scores(*outcomes: tuple[str, bool]) -> Scores:
    return Scores(tuple(TaskScore(t, ok, 1000, causes=() if ok else ("write missing",)) for t, ok in outcomes))


def report(tier1_learned: Scores | None, tier1_default: Scores | None) -> SummaryReport:
    tier0 = scores(("a", True), ("b", True))
    seed = Candidate("seed+contract", "Keep ids.", None)
    return SummaryReport(
        experiment="e",
        suite="reach_long",
        target="langchain",
        knobs={"trigger_tokens": 2000},
        default_source="installed",
        default_note="",
        tasks={"train": 2, "val": 1, "test": 2},
        chosen_on="val",
        rows=(
            TextRow("learned", "Keep ids.", "v1", None, tier0, tier1_learned),
            TextRow("default", None, None, None, tier0, tier1_default),
            TextRow("seed", "Keep.", "v0", None, tier0, None),
        ),
        search=SearchRecord(seed=seed, candidates=[seed], chosen="seed+contract"),
        artifact="g.md",
    )


def test_tier1_is_paired_by_each_tasks_share_of_its_seeds():
    # Two seeds per task: learned solves a on both and b on one, the default a on one and b on neither.
    learned = scores(("a", True), ("b", False), ("a", True), ("b", True))
    default = scores(("a", False), ("b", False), ("a", True), ("b", False))
    pairs = report(learned, default).paired()
    tier1 = pairs["learned-default"]["tier1_success"]
    assert tier1["tasks"] == 2 and tier1["mean"] == 0.5  # (1 - 0.5 + 0.5 - 0) / 2 tasks
    # The seed row never ran the real agent: its pair has no tier-1 figure rather than a zero.
    assert "tier1_success" not in pairs["learned-seed"]
    assert "- learned-default: facts kept +0.00" in report(learned, default).markdown()
    assert "tier-1 success +0.50 [" in report(learned, default).markdown()
    assert "0.75 (2 x 2)" in report(learned, default).markdown()  # the learned row's tier-1 cell: tasks x seeds
    assert "- learned: write missing 1\n- default: write missing 3\n" in report(learned, default).markdown()
    assert report(learned, default).row("default").to_dict()["tier1_failures"] == {"write missing": 3}


def test_without_tier1_the_pairs_say_nothing_of_it():
    pairs = report(None, None).paired()
    assert all("tier1_success" not in p for p in pairs.values())
    assert pairs["learned-default"]["tier0_success"] == {"mean": 0.0, "low": 0.0, "high": 0.0, "tasks": 2}


def test_the_report_names_the_start_the_search_went_on_from_and_the_one_it_did_not():
    made = report(None, None)
    other = Candidate("facts-first+contract", "Ids first.", None)
    made.search.candidates.append(other)
    made.search.start = "facts-first+contract"
    text = made.markdown()
    assert "| facts-first+contract | – | – | – | start |" in text
    assert "| seed+contract | – | – | – | start, not taken: facts-first+contract ranked higher on train |" in text


def test_at_equal_peak_learned_meets_the_default_row_that_peaks_least_while_at_least_as_high():
    def at(peak: int, *solved: bool) -> Scores:
        return Scores(tasks=tuple(TaskScore(f"t{i}", ok, peak_tokens=peak) for i, ok in enumerate(solved)))

    made = report(None, None)
    learned = TextRow("learned", "Keep ids.", "v1", None, at(2022, True, True), at(2305, True, False))
    later = [
        TextRow("default@2400", None, None, None, at(2060, False, False), at(2290, False, False)),
        TextRow("default@2600", None, None, None, at(2200, True, False), at(2450, False, True)),
    ]
    made = dataclasses.replace(made, rows=(learned, *made.rows[1:], *later))
    # the default at the learned text's trigger peaks at 1,000: lower, so not the comparison
    assert made.equal_peak() == {"tier0": "default@2400", "tier1": "default@2600"}
    text = made.markdown()
    assert "- tier 0: learned 1.00 at 2,022, default@2400 0.00 at 2,060; learned-default@2400 +1.00 [" in text
    assert "- tier 1: learned 0.50 at 2,305, default@2600 0.50 at 2,450; learned-default@2600 +0.00 [" in text
    assert made.to_dict()["equal_peak"] == made.equal_peak()


def test_at_equal_peak_says_so_when_every_default_row_peaks_lower():
    made = report(None, None)
    higher = Scores(tasks=(TaskScore("a", True, peak_tokens=5000),))
    made = dataclasses.replace(made, rows=(dataclasses.replace(made.rows[0], tier0=higher), *made.rows[1:]))
    assert made.equal_peak() == {"tier0": None}
    assert "- tier 0: no default row peaks as high as learned (5,000)" in made.markdown()


def test_the_report_shows_each_sentence_said_otherwise_beside_what_replaced_it():
    from optimizer.summary.rewrite import Proposal
    from optimizer.summary.search import Attempt

    made = report(None, None)
    made.search.attempts += [
        Attempt("pp1.0", Proposal("paraphrase", "t", ("Restate the steps.",), replaces="Rewrite the steps."), "chosen"),
        Attempt("pp1.1", Proposal("paraphrase", "t", (), [("x", "the sentence as it was")], replaces="Keep ids."), "r"),
    ]
    text = made.markdown()
    assert (
        'Sentences the optimizer said otherwise (2):\n\n- pp1.0: "Rewrite the steps." -> "Restate the steps.": chosen'
        in text
    )
    assert '- pp1.1: "Keep ids." -> "(refused)": r' in text
    assert "said otherwise" not in report(None, None).markdown()  # no paraphrase tried, no section
