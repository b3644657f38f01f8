"""`acon diff JOB_DIR`: what compression dropped in each pair, and where."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from optimizer.cli.run_cmd import out
from optimizer.errors import AconError
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
    job_dir: Path = typer.Argument(..., help="Job directory of `acon optimize`."),
    task: str | None = typer.Option(None, help="Only this task."),
    round_index: int | None = typer.Option(None, "--round", help="Round (default: the first with pairs)."),
    json_path: Path | None = typer.Option(None, "--json", help="Write the diffs as JSON."),
) -> None:
    """Print, per pair, the missing literals: kind, retention class, checkpoint, step, and what dropped them."""
    if json_path is not None:
        writable_file(json_path, "--json")
    index, diffs = load_diffs(job_dir, round_index)
    if task is not None:
        diffs = [d for d in diffs if d.task_id == task]
        if not diffs:
            raise AconError(f"no pair for task {task!r} in round {index}")
    table = Table(title=f"Round {index}: {len(diffs)} pair(s) (full context solved, compressed failed)")
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
            table.add_row(d.task_id, str(d.divergence_step), "-", "-", "-", "-", "-", "diverged")
    out.print(table)
    for d in diffs:
        html = job_dir / "rounds" / f"{index:02d}" / "diffs" / f"{d.task_id}.html"
        if html.exists():
            out.print(f"{d.task_id}: {html}")
    if json_path is not None:
        atomic_write_json(json_path, {"round": index, "pairs": [d.to_dict() for d in diffs]})


def register(app: typer.Typer) -> None:
    app.command("diff")(diff)
