"""`report.json`: the report written with its schema version, and read back into the typed tree.

The benchmarks, `acon export` and anything else that reads a finished job go through `read_report`, so a
file from another acon or a damaged one stops them with one line instead of a `KeyError` deep inside.
"""

from __future__ import annotations

import json
from pathlib import Path

from optimizer.errors import ConfigError
from optimizer.jsontypes import JSONObject
from optimizer.report.model import Report
from optimizer.storage import atomic_write_json

# Raise it whenever a key changes meaning or goes away (adding one does not break a reader).
SCHEMA_VERSION = 1
# What a summary-instruction job's report.json says it is (`report.summary`), so this reader can refuse it by name.
SUMMARY_KIND = "summary_instructions"


def report_json(report: Report) -> JSONObject:
    return {"schema_version": SCHEMA_VERSION, **report.to_dict()}


def write_report(path: Path, report: Report) -> None:
    atomic_write_json(path, report_json(report))


def read_report(path: Path) -> Report:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the report ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text; expected the report.json of `acon optimize`") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: invalid JSON (line {exc.lineno}): {exc.msg}") from None
    if isinstance(data, dict) and data.get("kind") == SUMMARY_KIND:
        raise ConfigError(
            f"{path}: the report of a summary-instruction job (its rows are texts, not guidelines); "
            "read its report.md, or `acon export` its job directory"
        )
    version = data.get("schema_version") if isinstance(data, dict) else None
    if version != SCHEMA_VERSION:
        raise ConfigError(
            f"{path}: report schema {version if version is not None else 'none'}, this acon reads "
            f"{SCHEMA_VERSION}; run `acon optimize --resume` on its job to write it again"
        )
    try:
        return Report.from_dict(data)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ConfigError(f"{path} is damaged ({type(exc).__name__}: {exc}); run `acon optimize --resume`") from None
