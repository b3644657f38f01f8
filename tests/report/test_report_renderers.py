"""The four renderers of one report agree: what report.md shows, the terminal table and the MLflow run
description show in the same words."""

from __future__ import annotations

from optimizer.cli.optimize_cmd import TABLE_COLUMNS, report_table, verdict_lines
from optimizer.report.markdown import ROW_COLUMNS, acceptance_lines, headline, report_markdown
from optimizer.tracking.front_page import description
from tests.search.report_samples import full_report


def markdown_rows(text: str) -> list[dict[str, str]]:
    header = "| " + " | ".join(ROW_COLUMNS) + " |"
    lines = text.splitlines()
    start = lines.index(header) + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append(dict(zip(ROW_COLUMNS, [c.strip() for c in line.strip("|").split(" | ")], strict=True)))
    return rows


def table_rows() -> list[dict[str, str]]:
    table = report_table(full_report())
    cells = [list(column.cells) for column in table.columns]
    return [dict(zip(TABLE_COLUMNS, [str(c[i]) for c in cells], strict=True)) for i in range(table.row_count)]


# Columns both print the same way (the terminal groups thousands in counts the Markdown prints bare).
SHARED = ("strategy", "tier", "success", "95% CI", "never recalls", "peak mean", "× none")


def test_every_row_of_the_markdown_is_in_the_terminal_table():
    report = full_report()
    shown = markdown_rows(report_markdown(report))
    assert len(shown) == len(report.rows) == len(table_rows())
    for md, term in zip(shown, table_rows(), strict=True):
        assert {k: md[k] for k in SHARED} == {k: term[k] for k in SHARED}
        assert md["peak, both solved (chosen vs this)"] == term["peak, both solved"]


def test_the_headline_and_every_acceptance_check_are_in_the_description_and_the_markdown():
    report = full_report()
    text, note = report_markdown(report), description(report, [], experiment_id="1", run_id="abc")
    for line in headline(report):
        assert line in text and line in note
    checks = [line for tier in acceptance_lines(report) for line in tier.checks]
    assert checks and all(line in text and line in note for line in checks)
    assert f"`{report.chosen.name}@{report.chosen.version}`" in note and str(report.chosen.path) in text


def test_the_terminal_prints_every_acceptance_check_of_the_markdown():
    report = full_report()
    printed = "\n".join(verdict_lines(report))
    text = report_markdown(report)
    for tier in acceptance_lines(report):
        assert f"- {tier.tier} ({tier.suite}): {tier.verdict}" in text
        assert f"acceptance {tier.tier}: {tier.verdict}" in printed
        assert all(f"  - {line}" in text and line in printed for line in tier.checks)
