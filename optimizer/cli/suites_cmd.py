"""`acon suites list | show | export | import`: the registered suites, their tasks, and Parquet storage."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from optimizer.cli.console import log_line, plain_console, terminal_width
from optimizer.errors import ConfigError
from optimizer.world.suite import Suite, SuiteSource, available_suites
from optimizer.world.task import Need, NeedKind, Task

suites = typer.Typer(help="Task suites: list, inspect, export to Parquet, import recorded runs.", no_args_is_help=True)
err = plain_console(stderr=True)
out = plain_console(width=max(150, terminal_width()))


def _log(message: str) -> None:
    err.print(log_line("acon:", message))


def source_for(name: str) -> SuiteSource:
    """A registered suite name, or the path of a replay file (`.parquet` or trajectory `.jsonl`)."""
    from tasks.replay import ReplaySuite

    if Path(name).suffix in (".parquet", ".jsonl") and name not in available_suites():
        return ReplaySuite(path=name)
    known = available_suites()
    if name not in known:
        names = ", ".join(sorted(known))
        raise ConfigError(f"unknown suite {name!r}; known: {names} (or a .parquet / .jsonl path)")
    return known[name]()


def groups(suite: Suite) -> str:
    """Task families / categories / source files, as far as the suite's meta names them."""
    counts: Counter[str] = Counter()
    for task in suite.tasks:
        value = task.meta.get("family") or task.meta.get("category") or task.meta.get("source")
        if value:
            counts[str(value)] += 1
    return ", ".join(f"{name} ({n})" for name, n in sorted(counts.items())) or "-"


@suites.command("list")
def list_suites() -> None:
    """Every registered suite: tasks, split sizes, families or categories (BFCL only if installed)."""
    table = Table(title="suites")
    for column in ("suite", "type", "tasks", "train", "test", "families / categories"):
        table.add_column(column, justify="right" if column in ("tasks", "train", "test") else "left")
    skipped = []
    for name, factory in sorted(available_suites().items()):
        source = factory()
        try:
            suite = source.load()
        except ConfigError as exc:
            if source.type == "bfcl":  # not installed: listed only after `acon setup`
                skipped.append(name)
                continue
            table.add_row(name, source.type, "-", "-", "-", f"error: {exc}")
            continue
        table.add_row(
            name, source.type, str(len(suite.tasks)), str(len(suite.train_ids)), str(len(suite.test_ids)), groups(suite)
        )
    out.print(table)
    if skipped:
        out.print(f"not installed (run `acon setup`): {', '.join(skipped)}")


@suites.command("show")
def show(
    name: Annotated[str, typer.Argument(help="Suite name (`acon suites list`) or a .parquet / .jsonl path.")],
    task_id: Annotated[str | None, typer.Option("--task", help="Show one task in full.")] = None,
) -> None:
    """A suite's tasks, or one task: its turns, tools with retention classes, reference steps with needs."""
    suite = source_for(name).load()
    if task_id is None:
        out.print(
            f"{suite.name}: {len(suite.tasks)} tasks (train {len(suite.train_ids)}, "
            f"test {len(suite.test_ids)}); families / categories: {groups(suite)}",
            markup=False,
        )
        table = Table()
        for column in ("task", "split", "turns", "calls", "needs", "family / category"):
            table.add_column(column, justify="right" if column in ("turns", "calls") else "left")
        for task in suite.tasks:
            steps = task.reference or ()
            kinds = Counter(need.kind.value for step in steps for need in step.needs)
            calls = sum(s.call is not None for s in steps)
            table.add_row(
                task.id,
                _split(suite, task),
                str(len(task.turns)),
                str(calls),
                ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "-",
                str(task.meta.get("family") or task.meta.get("category") or task.meta.get("source") or "-"),
            )
        out.print(table)
        return
    _show_task(suite, suite.task(task_id))


def _split(suite: Suite, task: Task) -> str:
    return "train" if task.id in suite.train_ids else "test" if task.id in suite.test_ids else "-"


def _show_task(suite: Suite, task: Task) -> None:
    out.print(
        f"{task.id} ({suite.name}, {_split(suite, task)} split, {len(task.turns)} turn(s), "
        f"max {task.max_steps_per_turn} steps per turn)",
        markup=False,
    )
    for index, turn in enumerate(task.turns):
        out.print(f"\nturn {index}: {turn.content}", markup=False)
    env = task.make_env()
    try:
        first: dict[str, Any] = {}
        for turn_index in range(len(task.turns)):
            for spec in env.tools(turn_index):
                first.setdefault(spec.name, (spec, turn_index))
    finally:
        env.close()
    tools = Table(title="tools")
    for column in ("tool", "retention class", "side effect", "from turn", "description"):
        tools.add_column(column)
    for spec, turn in first.values():
        retention = spec.retention_class.value + (" (refined by arguments)" if spec.classify_call else "")
        tools.add_row(spec.name, retention, "yes" if spec.side_effect else "no", str(turn), _clip(spec.description, 70))
    out.print(tools)
    steps = Table(title="reference solution")
    for column in ("#", "turn", "step", "needs"):
        steps.add_column(column)
    for index, step in enumerate(task.reference or (), start=1):
        what = step.call.signature() if step.call is not None else f"answer: {step.answer!r}"
        needs = "\n".join(_need(n) for n in step.needs) or "-"
        steps.add_row(str(index), str(step.turn), _clip(what, 90), needs)
    out.print(steps)
    meta = json.dumps(dict(task.meta), ensure_ascii=False, default=str)
    out.print(f"meta: {_clip(meta, 600)}", markup=False)


def _need(need: Need) -> str:
    text = f"{need.kind.value} {need.literal!r}"
    if need.kind is NeedKind.VALUE and need.argument is not None:
        text += f" in {need.argument} (guess {_clip(json.dumps(need.guess, default=str), 40)})"
    if need.repeat is not None:
        text += f" (else repeats {need.repeat.name})"
    if need.source_class:
        text += f" from {need.source_class}"
    return text


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


@suites.command("export")
def export(
    name: Annotated[str, typer.Argument(help="Suite name or a .parquet / .jsonl path.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder: NAME.parquet, NAME/{train,test}.parquet")],
) -> None:
    """Write a suite and its splits to Parquet (through `datasets`), loadable as `type = "replay"`."""
    from tasks.replay import stored_from_suite, write_parquet

    suite = source_for(name).load()
    stored = stored_from_suite(suite)
    written = [write_parquet(stored, out_dir / f"{suite.name}.parquet")]
    for split in ("train", "test"):
        rows = [t for t in stored if t.split == split]
        written.append(write_parquet(rows, out_dir / suite.name / f"{split}.parquet"))
    out.print(
        f"{suite.name}: {len(stored)} tasks (train {len(suite.train_ids)}, test {len(suite.test_ids)})", markup=False
    )
    for path in written:
        out.print(f"wrote {path}", markup=False)


@suites.command("import")
def import_(
    file: Annotated[
        Path | None,
        typer.Argument(help="Recorded runs in OpenAI chat format, one per line (.jsonl); omit with --experiment."),
    ] = None,
    name: Annotated[str, typer.Option(help="Name of the new replay suite.")] = "",
    out_dir: Annotated[Path | None, typer.Option("--out", help="Folder of NAME.parquet (suites/).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the fixed 50/50 train/test split.")] = 0,
    force: Annotated[bool, typer.Option(help="Replace an existing NAME.parquet.")] = False,
    experiment: Annotated[
        str | None,
        typer.Option(help="Import the runs traced in this MLflow experiment (e.g. by mlflow.openai.autolog())."),
    ] = None,
    tracking_uri: Annotated[str | None, typer.Option(help="MLflow tracking URI of --experiment.")] = None,
    filter_string: Annotated[str | None, typer.Option("--filter", help="MLflow trace filter for --experiment.")] = None,
    retention: Annotated[
        Path | None,
        typer.Option(
            help="With --experiment: JSON tool -> {retention_class, side_effect}, as a JSONL run's 'retention'."
        ),
    ] = None,
) -> None:
    """Convert recorded successful runs into a replay suite: a JSONL file (format: `tasks/replay/trajectories.py`)
    or an MLflow experiment's traces (`tasks/replay/mlflow_traces.py`)."""
    from tasks.replay import DEFAULT_DIR, import_mlflow_traces, import_trajectories

    if not name:
        raise ConfigError("--name is required")
    if experiment is None:
        if file is None:
            raise ConfigError("give a .jsonl file of recorded runs, or --experiment with --tracking-uri")
        if tracking_uri or filter_string or retention:
            raise ConfigError(
                "--tracking-uri, --filter and --retention go with --experiment (a JSONL file carries its retention map)"
            )
        target, suite = import_trajectories(file, name, out=out_dir or DEFAULT_DIR, seed=seed, force=force)
        source = str(file)
    else:
        if file is not None:
            raise ConfigError("give a .jsonl file or --experiment, not both")
        if tracking_uri is None:
            raise ConfigError("--experiment needs --tracking-uri")
        retention_map = _json_file(retention) if retention is not None else None
        target, suite = import_mlflow_traces(
            tracking_uri,
            experiment,
            name,
            filter_string=filter_string,
            retention=retention_map,
            out=out_dir or DEFAULT_DIR,
            seed=seed,
            force=force,
        )
        source = f"MLflow experiment {experiment!r}"
    steps = [step for task in suite.tasks for step in task.reference or ()]
    calls = sum(step.call is not None for step in steps)
    needs = sum(len(step.needs) for step in steps)
    out.print(
        f"imported {len(suite.tasks)} runs from {source} into {target}: train {len(suite.train_ids)}, "
        f"test {len(suite.test_ids)}; {calls} recorded calls, {needs} value needs",
        markup=False,
    )
    extra = sorted({key for task in suite.tasks for key in task.meta.get("extra_keys", ())})
    if extra:
        carried = sum(bool(task.meta.get("extra_keys")) for task in suite.tasks)
        out.print(
            f"{carried} runs carry top-level keys beyond the format ({', '.join(extra)}): kept in each "
            "task's meta, listed in meta['extra_keys']",
            markup=False,
        )
    where = f'name = "{name}"' if out_dir is None else f'path = "{target}"'
    out.print(f'use it with:  [suite] type = "replay", {where}', markup=False)


def _json_file(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"file not found: {path}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not JSON ({exc})") from None


def register(app: typer.Typer) -> None:
    app.add_typer(suites, name="suites")
