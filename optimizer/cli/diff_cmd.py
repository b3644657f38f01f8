"""`acon diff JOB_DIR | COMPARE.json`: what compression dropped in each pair, and where.

A job directory of `acon optimize` shows a round's pairs; the JSON of `acon compare --json` shows, per
strategy, each task `none` solved and the strategy failed.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import typer
from rich.table import Table

from optimizer.cli.run_cmd import _log, out
from optimizer.errors import AconError, ConfigError
from optimizer.mining.pair_diff import PairDiff
from optimizer.storage import atomic_write_json, writable_file


def load_diffs(job_dir: Path, round_index: int | None) -> tuple[int, list[PairDiff]]:
    rounds = sorted((job_dir / "rounds").glob("*/diffs.json")) if (job_dir / "rounds").is_dir() else []
    if not rounds:
        raise AconError(f"{job_dir}: no pair diffs found (expected rounds/NN/diffs.json from `acon optimize`)")
    if round_index is not None:
        chosen = job_dir / "rounds" / f"{round_index:02d}" / "diffs.json"
        if not chosen.exists():
            raise AconError(f"{job_dir}: round {round_index} has no diffs")
    else:
        with_pairs = [p for p in rounds if json.loads(p.read_text())]
        chosen = (with_pairs or rounds)[0]
    return int(chosen.parent.name), [PairDiff.from_dict(d) for d in json.loads(chosen.read_text())]


def diff(
    job_dir: Path = typer.Argument(..., help="Job directory of `acon optimize`, or the JSON of `acon compare --json`."),
    task: str | None = typer.Option(None, help="Only this task."),
    round_index: int | None = typer.Option(None, "--round", help="Round (default: the first with pairs)."),
    json_path: Path | None = typer.Option(None, "--json", help="Write the diffs as JSON."),
) -> None:
    """Print, per pair, the missing literals: kind, retention class, checkpoint, step, and what dropped them."""
    if json_path is not None:
        writable_file(json_path, "--json")
    if not job_dir.exists():
        raise ConfigError(f"{job_dir} does not exist (expected a job directory of `acon optimize` or a compare's JSON)")
    if job_dir.is_file():
        if round_index is not None:
            raise AconError("--round applies to a job directory of `acon optimize`, not to a compare's JSON")
        _diff_compare(job_dir, task, json_path)
        return
    index, diffs = load_diffs(job_dir, round_index)
    if task is not None:
        diffs = [d for d in diffs if d.task_id == task]
        if not diffs:
            raise AconError(f"no pair for task {task!r} in round {index}")
    table = _table(f"Round {index}: {len(diffs)} pair(s) (full context solved, compressed failed)", diffs)
    out.print(table)
    for d in diffs:
        html = job_dir / "rounds" / f"{index:02d}" / "diffs" / f"{d.task_id}.html"
        if html.exists():
            out.print(f"{d.task_id}: {html}")
    if json_path is not None:
        atomic_write_json(json_path, {"round": index, "pairs": [d.to_dict() for d in diffs]})


def _table(title: str, diffs: list[PairDiff]) -> Table:
    table = Table(title=title)
    for column in ("task", "step", "missing literal", "kind", "class", "checkpoint", "removed by", "agent did"):
        table.add_column(column)
    for d in diffs:
        for f in d.missing or []:
            record = f.record or {}
            table.add_row(
                d.task_id,
                str(f.step),
                f.literal,
                f.kind,
                f.retention or "?",
                f"{f.checkpoint or '-'} {f.checkpoint_name}",
                f"{record.get('stage', '-')}/{record.get('action', '-')}",
                f.behaviour,
            )
        if not d.missing:
            table.add_row(d.task_id, str(d.divergence_step), "-", "-", "-", "-", "-", d.cause or "diverged")
    return table


def _diff_compare(path: Path, task: str | None, json_path: Path | None) -> None:
    from optimizer.mining.compare_pairs import compare_pairs, is_compare_output

    try:
        data = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError):
        data = None
    if not is_compare_output(data):
        raise ConfigError(f"{path}: not the JSON of `acon compare --json` (nor a job directory of `acon optimize`)")
    by_strategy = compare_pairs(data, _tasks(data), source=str(path))
    if task is not None:
        by_strategy = [dataclasses.replace(s, diffs=[d for d in s.diffs if d.task_id == task]) for s in by_strategy]
    for pairs in by_strategy:
        title = f"{pairs.strategy}: {len(pairs.diffs)} task(s) `none` solved and it failed"
        out.print(_table(title, pairs.diffs))
    if json_path is not None:
        atomic_write_json(
            json_path,
            {
                "compare": str(path),
                "strategies": [
                    {"strategy": s.strategy, "directory": str(s.directory), "pairs": [d.to_dict() for d in s.diffs]}
                    for s in by_strategy
                ],
            },
        )


def _tasks(compare: dict) -> dict:
    """The compare's tasks, for their reference needs (tier 1 diffs look for them); none if the config is gone."""
    from optimizer.cli.run_cmd import load_with_overrides
    from optimizer.evaluate.strategy_runs import select_tasks

    config_path = Path(compare.get("experiment_path", ""))
    if not config_path.is_file():
        _log(f"{config_path or 'the experiment'} not found: tier-1 diffs use the full run's own arguments as needs")
        return {}
    config = load_with_overrides(config_path)
    return {t.id: t for t in select_tasks(config, compare["split"], None)}


def register(app: typer.Typer) -> None:
    app.command("diff")(diff)
