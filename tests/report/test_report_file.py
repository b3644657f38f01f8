"""report.json: written with a schema version, read back into the same typed report; a file from another
acon or a damaged one is refused in one line."""

from __future__ import annotations

import json

import pytest

from optimizer.errors import ConfigError
from optimizer.report.file import SCHEMA_VERSION, read_report, report_json, write_report
from tests.search.report_samples import full_report


def test_the_report_round_trips_through_its_file(tmp_path):
    report = full_report()
    path = tmp_path / "report.json"
    write_report(path, report)
    again = read_report(path)
    assert again == report
    assert json.loads(path.read_text())["schema_version"] == SCHEMA_VERSION
    assert report_json(again) == report_json(report)


def test_the_file_keeps_the_documented_keys(tmp_path):
    data = report_json(full_report())
    documented = {"chosen", "rows", "best_baseline", "paired", "llm_parts", "parts", "rounds", "pareto", "points"}
    assert documented | {"budget", "infrastructure", "acceptance", "cut", "stopped"} <= set(data)
    row = data["rows"][0]
    assert {"strategy", "tier", "success", "success_ci", "peak_tokens_mean", "summary"} <= set(row)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{}", "report schema none, this acon reads 1"),
        (json.dumps({"schema_version": SCHEMA_VERSION + 1}), f"report schema {SCHEMA_VERSION + 1}"),
        ("[1, 2]", "report schema none"),
        ("{not json", "invalid JSON (line 1)"),
        (json.dumps({"schema_version": SCHEMA_VERSION, "rows": []}), "is damaged (KeyError"),
        (json.dumps({"schema_version": 1, "kind": "summary_instructions"}), "the report of a summary-instruction job"),
    ],
)
def test_a_file_from_another_acon_or_a_damaged_one_is_one_line(tmp_path, text, says):
    path = tmp_path / "report.json"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        read_report(path)
    message = str(caught.value)
    assert says in message and str(path) in message and "\n" not in message


def test_a_missing_file_is_one_line(tmp_path):
    with pytest.raises(ConfigError, match="cannot read the report"):
        read_report(tmp_path / "report.json")
