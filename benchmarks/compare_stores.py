"""Compare two optimize jobs' MLflow stores run by run, through the MLflow client.

    python benchmarks/compare_stores.py JOB_A JOB_B [--out benchmarks/results/store_compare.json]

Each job directory's store is found as `acon ui` finds it (`resolve_uri`: its `mlflow_run.json`, else
`<job>/mlflow.db`). Runs are matched by their `acon.key` tag, the job run by `acon.job`; registered guideline
prompts by name and version; experiments (their tags hold the shared views) by name. For each matched run
this compares its name, status, parent (by key), params, tags, every metric's (step, value) history, its
artifact paths and their content (text artifacts normalized as below, binary ones by sha256), and its
traces: how many, and each one's tags, state and token usage. Prints a table per kind of run (the key's
first part: `job`, `round`, `candidate`, `eval`, ...) and every difference; writes them as JSON; exits 1
when the stores differ beyond what is ignored.

Evaluations are keyed by what they ran with, the endpoints' base_url included: two jobs compared must use
the same model server address, or every evaluation that calls the compressor is "only in A" and "only in B".

What differs by construction between two runs of the same job, and is therefore not compared (two runs of
one commit against one stub server compare equal under these rules):

- run and trace ids, start and end times of runs, metric points and traces (MLflow's own clocks);
- tags `mlflow.user`, `mlflow.source.*` (who ran it, from which worktree and commit: the point of a
  comparison across commits), `mlflow.runName` (the run name, compared on its own) and `mlflow.parentRunId`
  (an id: the parent is compared by its key instead), and the same `mlflow.user`/`mlflow.source.*` tags and
  the `mlflow.artifactLocation` path on traces;
- the metric `wall_s`, an evaluation's wall time;
- in every param, tag and text artifact: the job directory's path (`<job>`: report.md names the chosen
  guideline's file and the store), run ids (`<run:KEY>`, the run's key in its own store, so a link to
  another run is still compared by what it links to), trace ids (`<trace>`), other 32-hex MLflow ids
  (`<id>`), ISO dates and times (`<time>`), and the port of a server on 127.0.0.1 (`<port>`: a stub model
  server listens on a free port; the endpoints' base_url is a param);
- in text artifacts and the run description, durations written as `N s`, `N min` or `N.N h` (report.md's
  wall time); in JSON artifacts, fields and logged-table columns named `wall_s`, `seconds`, `job_seconds`
  or ending `_s` (report.json's `wall_s`, the episode table's `wall_s` column);
- in HTML artifacts, the numbers in `difflib.HtmlDiff`'s anchor ids (a counter of the process, not of the diff);
- the order of the rows of the run description's table of pair links: they follow the compressed episodes'
  trace timestamps, and a run's episodes run concurrently (the rows are compared as a sorted list).

A param or metric that only changed its name (same value under a name ending with the old one's last part)
is still a difference, shown as one rename. Nothing else is ignored: a difference in figures, runs,
metrics, guidelines or traces is reported.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from optimizer import _offline  # noqa: E402,F401

os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # a bar per artifact read otherwise
from optimizer.errors import AconError  # noqa: E402
from optimizer.interrupts import run_main  # noqa: E402

KEY_TAG = "acon.key"
JOB_TAG = "acon.job"
IGNORED_TAGS = ("mlflow.user", "mlflow.runName", "mlflow.parentRunId", "mlflow.artifactLocation")
IGNORED_TAG_PREFIXES = ("mlflow.source.",)
IGNORED_METRICS = ("wall_s",)
DESCRIPTION_TAG = "mlflow.note.content"
TEXT_SUFFIXES = (".md", ".txt", ".json", ".jsonl", ".html", ".csv", ".diff", ".toml", ".yaml", ".yml")
HEX_ID = re.compile(r"\b[0-9a-f]{32}\b")
TRACE_ID = re.compile(r"\btr-[0-9a-f]{32}\b")
LOCAL_PORT = re.compile(r"\b(127\.0\.0\.1|localhost):\d+")
ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?")
DURATION = re.compile(r"\b\d+(\.\d+)?\s?(s|min|h)\b")
# difflib.HtmlDiff numbers its tables' anchors from a counter shared by the whole process: the same side-by-side
# diff gets other anchor ids when the process made more or fewer diffs before it (a resumed job).
HTML_DIFF_ANCHOR = re.compile(r"\b(difflib_chg_to|from|to)\d+_")
FIELDS = ("name", "status", "parent", "params", "tags", "metrics", "artifacts", "traces")


@dataclass
class Normalizer:
    """Rewrites what differs by construction between two stores into placeholders (see the module docstring)."""

    job_dir: Path
    run_keys: dict[str, str] = field(default_factory=dict)

    def text(self, value: str, *, durations: bool = False) -> str:
        value = value.replace(str(self.job_dir), "<job>")
        value = TRACE_ID.sub("<trace>", value)
        value = HEX_ID.sub(self._run_or_id, value)
        value = ISO_TIME.sub("<time>", value)
        value = LOCAL_PORT.sub(r"\1:<port>", value)
        return DURATION.sub("<duration>", value) if durations else value

    def _run_or_id(self, match: re.Match[str]) -> str:
        key = self.run_keys.get(match.group())
        return f"<run:{key}>" if key is not None else "<id>"

    def json_text(self, value: str) -> str:
        try:
            data = json.loads(value)
        except ValueError:
            return self.text(value, durations=True)
        return json.dumps(_without_durations(data), indent=1, sort_keys=True)

    def artifact(self, path: str, content: bytes) -> str:
        if not path.endswith(TEXT_SUFFIXES):
            return "sha256:" + hashlib.sha256(content).hexdigest()
        text = self.text(content.decode("utf-8", errors="replace"))
        if path.endswith(".html"):
            text = HTML_DIFF_ANCHOR.sub(r"\1<n>_", text)
        return self.json_text(text) if path.endswith(".json") else self.text(text, durations=True)


def _without_durations(data: Any) -> Any:
    if isinstance(data, dict) and isinstance(data.get("columns"), list) and isinstance(data.get("data"), list):
        return _table_without_durations(data)
    if isinstance(data, dict):
        return {k: "<duration>" if _is_duration(k) else _without_durations(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_without_durations(v) for v in data]
    return data


def _table_without_durations(table: dict[str, Any]) -> dict[str, Any]:
    """A logged table (`log_table`: columns, rows) with its duration columns blanked."""
    timed = {i for i, column in enumerate(table["columns"]) if isinstance(column, str) and _is_duration(column)}
    rows = [
        [("<duration>" if i in timed else value) for i, value in enumerate(row)] if isinstance(row, list) else row
        for row in table["data"]
    ]
    return {**table, "data": rows}


def _is_duration(key: str) -> bool:
    return key in ("wall_s", "seconds", "job_seconds") or key.endswith("_s")


def ignored_tag(name: str) -> bool:
    return name in IGNORED_TAGS or name.startswith(IGNORED_TAG_PREFIXES)


def run_key(tags: Mapping[str, str]) -> str | None:
    if KEY_TAG in tags:
        return tags[KEY_TAG]
    return f"job:{tags[JOB_TAG]}" if JOB_TAG in tags else None


def kind_of(key: str) -> str:
    if key.startswith(("job:", "prompt:", "experiment:")):
        return key.split(":", 1)[0]
    return key.split("/", 1)[0]


# Reading a store ----------------------------------------------------------------------------------------


def store_uri(job_dir: Path) -> str:
    from optimizer.tracking.store import resolve_uri

    return resolve_uri(job_dir)


def snapshot(job_dir: Path) -> dict[str, dict[str, Any]]:
    """Every run (and registered prompt version) of a job's store, by key, normalized for comparison."""
    from mlflow import MlflowClient

    job_dir = job_dir.resolve()
    if not job_dir.is_dir():
        raise AconError(f"{job_dir}: no such job directory")
    uri = store_uri(job_dir)
    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    experiments = [e for e in client.search_experiments() if e.name != "Default"]
    runs = [r for e in experiments for r in _all_runs(client, e.experiment_id)]
    normalizer = Normalizer(job_dir, unique_keys(runs))
    result: dict[str, dict[str, Any]] = {}
    for run in runs:
        result[normalizer.run_keys[run.info.run_id]] = _run_view(client, run, normalizer, _traces_of(client, run))
    result.update(_prompt_views(client, normalizer))
    for experiment in experiments:  # where a job keeps its shared views of the runs
        tags = {k: normalizer.text(v) for k, v in sorted(experiment.tags.items()) if not ignored_tag(k)}
        result[f"experiment:{experiment.name}"] = {"name": experiment.name, "tags": tags}
    return result


def unique_keys(runs: Iterable[Any]) -> dict[str, str]:
    """Each run's key: its `acon.key` (`job:<acon.job>` for a job run); a key that several runs carry (a child
    key is unique under its parent only) is qualified by the parent's key, then by its order of creation."""
    runs = sorted(runs, key=lambda r: (r.info.start_time or 0, r.info.run_id))
    keys = {r.info.run_id: run_key(r.data.tags) or f"unkeyed:{r.info.run_name}" for r in runs}
    shared = {key for key in keys.values() if list(keys.values()).count(key) > 1}
    plain = dict(keys)
    for run in runs:
        parent = run.data.tags.get("mlflow.parentRunId")
        if keys[run.info.run_id] in shared and parent is not None:
            keys[run.info.run_id] = f"{plain[run.info.run_id]} (under {plain.get(parent, '?')})"
    seen: dict[str, int] = {}
    for run_id, key in keys.items():
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            keys[run_id] = f"{key} #{seen[key]}"
    return keys


def _all_runs(client: Any, experiment_id: str) -> list[Any]:
    runs, token = [], None
    while True:
        page = client.search_runs([experiment_id], max_results=1000, page_token=token)
        runs.extend(page)
        token = page.token
        if not token:
            return runs


def _traces_of(client: Any, run: Any) -> list[Any]:
    """The traces MLflow links to a run (a pair's trace is linked to each run that marked it)."""
    infos, token = [], None
    while True:
        page = client.search_traces(
            locations=[run.info.experiment_id],
            run_id=run.info.run_id,
            max_results=500,
            page_token=token,
            include_spans=False,
        )
        infos.extend(trace.info for trace in page)
        token = page.token
        if not token:
            return infos


def _run_view(client: Any, run: Any, normalizer: Normalizer, traces: list[Any]) -> dict[str, Any]:
    tags = run.data.tags
    parent = tags.get("mlflow.parentRunId")
    return {
        "name": run.info.run_name,
        "status": run.info.status,
        "parent": normalizer.run_keys.get(parent, "<unknown>") if parent else None,
        "params": {k: normalizer.text(v) for k, v in sorted(run.data.params.items())},
        "tags": {k: _tag_value(k, v, normalizer) for k, v in sorted(tags.items()) if not ignored_tag(k)},
        "metrics": {
            key: [[m.step, m.value] for m in sorted(client.get_metric_history(run.info.run_id, key), key=_point)]
            for key in sorted(run.data.metrics)
            if key not in IGNORED_METRICS
        },
        "artifacts": _artifacts(client, run.info.run_id, normalizer),
        "traces": _trace_view(traces, normalizer),
    }


def _tag_value(name: str, value: str, normalizer: Normalizer) -> str:
    if name != DESCRIPTION_TAG:
        return normalizer.text(value)
    return _trace_rows_sorted(normalizer.text(value, durations=True))


def _trace_rows_sorted(markdown: str) -> str:
    """The description's table of pair links with its rows sorted: they come in the order of the compressed
    episodes' trace timestamps, and a run's episodes run concurrently."""
    lines, block = [], []
    for line in [*markdown.splitlines(), ""]:
        if line.startswith("|") and "/traces/" in line:
            block.append(line)
            continue
        lines.extend(sorted(block))
        block = []
        lines.append(line)
    return "\n".join(lines[:-1])


def _point(metric: Any) -> tuple[int, float]:
    return metric.step, metric.value


def _artifacts(client: Any, run_id: str, normalizer: Normalizer) -> dict[str, str]:
    from mlflow.artifacts import download_artifacts

    files: dict[str, str] = {}
    pending: list[str | None] = [None]
    while pending:
        for info in client.list_artifacts(run_id, pending.pop()):
            if info.is_dir:
                pending.append(info.path)
                continue
            local = download_artifacts(run_id=run_id, artifact_path=info.path, tracking_uri=client.tracking_uri)
            files[info.path] = normalizer.artifact(info.path, Path(local).read_bytes())
    return dict(sorted(files.items()))


def _trace_view(traces: Iterable[Any], normalizer: Normalizer) -> dict[str, Any]:
    rows = []
    for info in traces:
        tags = {k: normalizer.text(v) for k, v in sorted(info.tags.items()) if not ignored_tag(k)}
        rows.append(json.dumps({"tags": tags, "status": str(info.state), "usage": info.token_usage}, sort_keys=True))
    return {"count": len(rows), "traces": sorted(rows)}


def _prompt_views(client: Any, normalizer: Normalizer) -> dict[str, dict[str, Any]]:
    views: dict[str, dict[str, Any]] = {}
    for prompt in client.search_prompts(max_results=1000):
        for version in client.search_prompt_versions(prompt.name, max_results=1000):
            aliases = sorted(getattr(version, "aliases", None) or [])
            views[f"prompt:{prompt.name}/{version.version}"] = {
                "name": prompt.name,
                "tags": {k: normalizer.text(v) for k, v in sorted((version.tags or {}).items())},
                "artifacts": {"template": normalizer.text(str(version.template))},
                "params": {"aliases": ",".join(aliases)},
            }
    return views


# Comparing ----------------------------------------------------------------------------------------------


def compare(a: Mapping[str, Mapping[str, Any]], b: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Runs only in A, only in B, and for each matched run the fields that differ (with both values)."""
    differing: dict[str, list[dict[str, Any]]] = {}
    for key in sorted(a.keys() & b.keys()):
        found = [d for name in FIELDS for d in _field_differences(name, a[key].get(name), b[key].get(name))]
        if found:
            differing[key] = renamed(found)
    kinds = sorted({kind_of(k) for k in (*a, *b)})
    table = {
        kind: {
            "matched": sum(1 for k in a.keys() & b.keys() if kind_of(k) == kind),
            "only_a": sum(1 for k in a.keys() - b.keys() if kind_of(k) == kind),
            "only_b": sum(1 for k in b.keys() - a.keys() if kind_of(k) == kind),
            "differing": sum(1 for k in differing if kind_of(k) == kind),
        }
        for kind in kinds
    }
    return {
        "table": table,
        "only_a": sorted(a.keys() - b.keys()),
        "only_b": sorted(b.keys() - a.keys()),
        "differing": differing,
        "same": not differing and a.keys() == b.keys(),
    }


def _field_differences(name: str, a: Any, b: Any) -> list[dict[str, Any]]:
    if a == b:
        return []
    if isinstance(a, dict) and isinstance(b, dict) and name != "traces":
        keys = sorted(a.keys() | b.keys())
        return [_difference(f"{name}.{k}", a.get(k), b.get(k)) for k in keys if a.get(k) != b.get(k)]
    if name == "traces":
        return _trace_differences(a or {"count": 0, "traces": []}, b or {"count": 0, "traces": []})
    return [{"field": name, "a": a, "b": b}]


def renamed(differences: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A param or metric only in A and one only in B with the same value, one name ending with the other's last
    part (`optimize.rounds` -> `optimize.budget.rounds`, `success` -> `train_success`), as one difference: a
    rename. Still a difference; shown as one so that a changed value is not lost among the moves."""
    out = list(differences)
    for gone in differences:
        if gone.get("b", "") is not None or gone.get("a") is None:
            continue
        kind, name = gone["field"].split(".", 1)
        for new in out:
            if new.get("a", "") is not None or new.get("b") != gone["a"] or not new["field"].startswith(f"{kind}."):
                continue
            other = new["field"].split(".", 1)[1]
            if other.endswith(name.rsplit(".", 1)[-1]) or name.endswith(other.rsplit(".", 1)[-1]):
                out.remove(gone)
                field = f"{gone['field']} -> {new['field']}"
                out[out.index(new)] = {"field": field, "renamed": True, "value": gone["a"]}
                break
    return out


def _difference(field: str, a: Any, b: Any) -> dict[str, Any]:
    """Both values; two texts of several lines as a unified diff instead (a report, a guideline, a table)."""
    if isinstance(a, str) and isinstance(b, str) and "\n" in a + b:
        lines = difflib.unified_diff(a.splitlines(), b.splitlines(), "A", "B", n=1, lineterm="")
        return {"field": field, "diff": list(lines)}
    return {"field": field, "a": a, "b": b}


def _trace_differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[dict[str, Any]]:
    only_a, only_b = list(a["traces"]), list(b["traces"])
    for row in a["traces"]:
        if row in only_b:
            only_a.remove(row)
            only_b.remove(row)
    return [
        {
            "field": "traces",
            "a": {"count": a["count"], "unmatched": [json.loads(r) for r in only_a]},
            "b": {"count": b["count"], "unmatched": [json.loads(r) for r in only_b]},
        }
    ]


# Output -------------------------------------------------------------------------------------------------


def print_result(result: Mapping[str, Any], limit: int) -> None:
    print(f"{'kind':<12}{'matched':>9}{'only A':>8}{'only B':>8}{'differ':>8}")
    for kind, row in result["table"].items():
        print(f"{kind:<12}{row['matched']:>9}{row['only_a']:>8}{row['only_b']:>8}{row['differing']:>8}")
    for side in ("only_a", "only_b"):
        for key in result[side]:
            print(f"{side.replace('_', ' ')}: {key}")
    for key, differences in result["differing"].items():
        for difference in differences:
            print(f"{key}  {difference['field']}:")
            if difference.get("renamed"):
                print(f"    renamed, same value: {_short(difference['value'], limit)}")
                continue
            if "diff" in difference:
                for line in difference["diff"][2:]:
                    print(f"    {_short(line, limit)}")
                continue
            print(f"    A: {_short(difference['a'], limit)}")
            print(f"    B: {_short(difference['b'], limit)}")
    print("stores: same (beyond ignored fields)" if result["same"] else "stores: DIFFER")


def _short(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} chars)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("job_a", type=Path)
    parser.add_argument("job_b", type=Path)
    parser.add_argument("--out", type=Path, help="write the comparison as JSON")
    parser.add_argument("--labels", nargs=2, metavar=("A", "B"), help="what each job is (its commit), kept in the JSON")
    parser.add_argument("--width", type=int, default=300, help="characters of a value printed per difference")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"a": str(args.job_a), "b": str(args.job_b)}
    if args.labels:
        result["labels"] = {"a": args.labels[0], "b": args.labels[1]}
    result.update(compare(snapshot(args.job_a), snapshot(args.job_b)))
    print_result(result, args.width)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    return 0 if result["same"] else 1


if __name__ == "__main__":
    run_main(main, "compare_stores")
