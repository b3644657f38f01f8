"""The README's benchmark figures agree with the JSON the benchmarks wrote (issue 17: figures copied by
hand drifted, and some were rounded in the favourable direction)."""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import ROOT, benchmark_module


@pytest.fixture(scope="module")
def figures():
    yield from benchmark_module("readme_figures")


@pytest.fixture(scope="module")
def quality():
    return json.loads((ROOT / "benchmarks" / "results" / "quality.json").read_text())


def _row(quality, suite, kind):
    return next(r for r in quality["rows"] if r["suite"] == suite and r["kind"] == kind and r["recall"] == "honest")


def test_the_readme_quality_rows_are_the_rendering_of_the_json(figures, quality):
    problem = figures.disagreement((ROOT / "README.md").read_text(), quality)
    assert problem is None, f"{problem}: run `python benchmarks/readme_figures.py --write`"


def test_a_hand_edited_figure_is_caught(figures, quality):
    readme = (ROOT / "README.md").read_text()
    learned = _row(quality, "builtin", "learned")
    shown = f"**{learned['peak_tokens_mean']:,.0f}**"
    assert shown in figures.readme_block(readme)
    edited = readme.replace(shown, f"**{learned['peak_tokens_mean'] - 100:,.0f}**")
    assert "built-in suite" in figures.disagreement(edited, quality)
    dropped = readme.replace(figures.readme_block(readme).splitlines()[-1] + "\n", "")
    assert "quality lines" in figures.disagreement(dropped, quality)


def test_rounding_is_to_nearest_not_favourable(figures):
    row = {"peak_tokens_mean": 2167.5001, "peak_vs_none": 0.515}
    assert figures._peak(row) == "2,168"
    assert figures._ratio({"peak_vs_none": 0.5151}) == " (0.52 ×)"


# Prose figures in "Where it stands" that the JSON also holds: (text in the README, its value).
PROSE = [
    (r"it is ([\d.]+) × the oracle\. It leans", lambda q: _row(q, "bfcl_long_context", "learned")["peak_vs_oracle"]),
    (
        r"agent that never recalls solves ([\d.]+) \(`offload_preview`",
        lambda q: _row(q, "bfcl_long_context", "learned")["success_without_recall"],
    ),
    (
        r"acceptance bar said PASS, [^)]*\) and is ([\d.]+) × the oracle",
        lambda q: _row(q, "builtin", "learned")["peak_vs_oracle"],
    ),
    (r"0\.5 × goal \(([\d.]+) ×; the job's", lambda q: _row(q, "builtin", "learned")["peak_vs_none"]),
]


@pytest.mark.parametrize(
    ("pattern", "value"), PROSE, ids=["bfcl_vs_oracle", "bfcl_never_recall", "builtin_vs_oracle", "builtin_vs_none"]
)
def test_prose_figures_match_the_json(quality, pattern, value):
    readme = " ".join((ROOT / "README.md").read_text().split())
    match = re.search(pattern, readme)
    assert match, f"README no longer says {pattern!r}"
    assert match.group(1) == f"{value(quality):.2f}"


def _knob(fidelity, name):
    return fidelity["by_knob"][name]


def _fitted(fidelity):
    return _knob(fidelity, fidelity["fitted_knob"])


# The fidelity figures the README quotes, each against `results/fidelity.json`.
FIDELITY = [
    (r"3 seeds with the 1\.5B agent \(`none` solves ([\d.]+) at tier 1\)", lambda f: f"{f['none_success']:.2f}"),
    (r"agreement ([\d.]+) \[[\d.]+, [\d.]+\], false-pass rate", lambda f: f"{_knob(f, 'honest')['agreement']:.2f}"),
    (
        r"false-pass rate ([\d.]+ \[[\d.]+, [\d.]+\]) with the default honest recall",
        lambda f: "{:.2f} [{:.2f}, {:.2f}]".format(
            _knob(f, "honest")["false_pass_rate"], *_knob(f, "honest")["false_pass_ci"]
        ),
    ),
    (r"fitted to the model \(p = ([\d.]+)\)", lambda f: f"{f['recall_probability_fit']['p_hat']:.2f}"),
    (
        r"\(p = [\d.]+\) ([\d.]+ \[[\d.]+, [\d.]+\]) and",
        lambda f: "{:.2f} [{:.2f}, {:.2f}]".format(_fitted(f)["agreement"], *_fitted(f)["agreement_ci"]),
    ),
    (r"of the (\d+) strategy episodes that tier 0 passed", lambda f: str(_knob(f, "honest")["false_pass_of"])),
    (r"passed at tier 1, (\d+) failed at tier 1", lambda f: str(_knob(f, "honest")["false_pass"])),
    (r"lifts agreement to ([\d.]+) and", lambda f: f"{_fitted(f)['agreement']:.2f}"),
    (
        r"solved ([\d.]+) of the `reach` episodes at tier 1",
        lambda f: f"{f['recall_probability_fit']['tier1_success']['learned']:.2f}",
    ),
]


@pytest.mark.parametrize(("pattern", "value"), FIDELITY, ids=[p for p, _ in FIDELITY])
def test_fidelity_figures_match_the_json(pattern, value):
    fidelity = json.loads((ROOT / "benchmarks" / "results" / "fidelity.json").read_text())
    readme = " ".join((ROOT / "README.md").read_text().split())
    match = re.search(pattern, readme)
    assert match, f"README no longer says {pattern!r}"
    assert match.group(1) == value(fidelity)


def test_probe_figures_match_the_json():
    probe = json.loads((ROOT / "benchmarks" / "results" / "probe_position.json").read_text())
    readme = " ".join((ROOT / "README.md").read_text().split())
    match = re.search(
        r"followed in (\d+) of (\d+) trials per length wherever it sits, never done without it \((\d+) of (\d+)\)",
        readme,
    )
    assert match, "README no longer states the probe's counts"
    ruled = [c for c in probe["cells"] if c["position"] != "absent"]
    controls = [c for c in probe["cells"] if c["position"] == "absent"]
    for length in {c["length"] for c in ruled}:
        mine = [c for c in ruled if c["length"] == length]
        assert (int(match.group(1)), int(match.group(2))) == (
            sum(c["complied"] for c in mine),
            sum(c["trials"] for c in mine),
        ), length
    assert (int(match.group(3)), int(match.group(4))) == (
        sum(c["complied"] for c in controls),
        sum(c["trials"] for c in controls),
    )
