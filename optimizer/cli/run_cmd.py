"""`acon run` (one strategy) and `acon compare` (several strategies on the same tasks)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from optimizer.agent.kinds import AGENTS
from optimizer.cli.console import log_line, plain_console, terminal_width
from optimizer.context.strategies import DETERMINISTIC, STRATEGY_NAMES
from optimizer.errors import ConfigError, EndpointError
from optimizer.storage import atomic_write_json, writable_file

if TYPE_CHECKING:
    from optimizer.config import ExperimentConfig
    from optimizer.context.strategies.base import ContextStrategy
    from optimizer.evaluate.strategy_runs import RunResult
    from optimizer.world.task import Task

AGENT_CHOICES = " | ".join(AGENTS.names())
err = plain_console(stderr=True)
out = plain_console(width=max(180, terminal_width()))  # the compare table has 14 columns


def _log(message: str, *, style: str | None = None) -> None:
    err.print(log_line("acon:", message, style=style))


def load_with_overrides(
    path: Path,
    *,
    split: str | None = None,
    limit: int | None = None,
    agent: str | None = None,
    base_url: str | None = None,
    model: str | None = None,
) -> ExperimentConfig:
    from optimizer.config import load_experiment  # the config names every union: deferred past `--help`

    if limit is not None and limit < 1:
        # 0 was read as "no limit" and ran every task; a run of no task has nothing to show either.
        raise ConfigError(f"--limit must be at least 1, not {limit} (leave it out to run every task)")
    config = load_experiment(path)
    run: dict[str, Any] = {}
    if split:
        run["split"] = split
    if limit is not None:
        run["limit"] = limit
    if agent:
        run["agent"] = agent
    overrides: dict[str, Any] = {"run": run} if run else {}
    if base_url or model:
        endpoints = config.endpoints.model_dump(mode="json")
        for role in endpoints.values():
            if base_url:
                role["base_url"] = base_url
            if model:
                role["model"] = model
        overrides["endpoints"] = endpoints
    return config.with_overrides(**overrides) if overrides else config


@contextlib.contextmanager
def progress_bar(label: str, total: int):
    with Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("ok {task.fields[ok]}"),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    ) as progress:
        task = progress.add_task(label, total=total, ok=0)

        def advance(episode) -> None:
            progress.update(task, advance=1, ok=progress.tasks[task].fields["ok"] + int(episode.success))

        yield advance


def fmt(value: Any, digits: int = 0) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def summary_table(rows: list[tuple[str, dict[str, Any]]], title: str) -> Table:
    # Where no endpoint priced a run (tier 0, a local model), its cost is projected under the headline price model.
    sources = sorted({s["cost_source"] for _, s in rows if s.get("cost_source")})
    table = Table(title=title, caption=f"cost/success: {', '.join(sources)}" if sources else None)
    for column in (
        "strategy",
        "tasks",
        "success",
        "95% CI",
        "peak mean",
        "peak max",
        "dependency",
        "tokens",
        "compressor",
        "recalls",
        "cache breaks",
        "cost/success",
        "infra",
        "wall s",
    ):
        table.add_column(column, justify="left" if column == "strategy" else "right")
    for name, s in rows:
        low, high = s["success_ci"]
        table.add_row(
            name,
            fmt(s["scored"]),
            f"{s['success']:.2f}",
            f"[{low:.2f}, {high:.2f}]",
            fmt(s["peak_tokens_mean"]),
            fmt(s["peak_tokens_max"]),
            fmt(s["dependency_mean"]),
            fmt(s["total_tokens"]),
            fmt(s["compressor_tokens"]),
            fmt(s["recall_calls"]),
            fmt(s["cache_breaks"]),
            fmt(s["cost_per_success"], 4),
            fmt(s["infra_errors"]),
            fmt(s["wall_s"], 1),
        )
    return table


def report_overrides(strategies: Sequence[ContextStrategy]) -> None:
    """Say when a strategy runs against the retention contract (a guideline allowed to leave classes unpinned)."""
    for strategy in strategies:
        override = getattr(strategy, "contract_override", None)
        note = override() if override is not None else None
        if note is not None:
            _log(note, style="yellow")


@contextlib.contextmanager
def hold_runs(config: ExperimentConfig, tasks: Sequence[Task], strategies: Sequence[ContextStrategy]) -> Iterator[None]:
    """This process's claim on the run directory of each strategy, for as long as the command runs."""
    from optimizer.evaluate.runner import BUSY_HINT
    from optimizer.evaluate.strategy_runs import plan_run
    from optimizer.locking import exclusive

    with contextlib.ExitStack() as stack:
        for strategy in strategies:
            plan = plan_run(config, tasks, strategy, agent=config.run.agent, split=config.run.split)
            stack.enter_context(exclusive(plan.directory, hint=BUSY_HINT))
        yield


def run(
    experiment: Path = typer.Argument(..., help="Experiment config (TOML)."),
    strategy: str | None = typer.Option(None, help="Strategy name (default: the config's)."),
    split: str | None = typer.Option(None, help="train | test | all."),
    limit: int | None = typer.Option(None, help="Run only the first N tasks."),
    agent: str | None = typer.Option(None, help=f"{AGENT_CHOICES}."),
    base_url: str | None = typer.Option(None, "--base-url", help="Use this OpenAI-compatible URL for all roles."),
    model: str | None = typer.Option(None, help="Model name for all roles."),
    json_path: Path | None = typer.Option(None, "--json", help="Write summary and episodes as JSON."),
) -> None:
    """Run episodes of one strategy and print the run table."""
    from optimizer.evaluate.strategy_runs import (
        check_tier,
        endpoints_for,
        episode_row,
        run_strategy,
        select_tasks,
        strategy_named,
    )
    from optimizer.search.events import RunEvaluated
    from optimizer.tracking import check_caught_up, tracked_job

    if json_path is not None:
        writable_file(json_path, "--json")  # refused before the run, not after it
    config = load_with_overrides(experiment, split=split, limit=limit, agent=agent, base_url=base_url, model=model)
    chosen = strategy_named(config, strategy).fixed()  # the version read now is the one claimed and run
    check_tier(chosen, config.run.agent)
    report_overrides([chosen])
    tasks = select_tasks(config, config.run.split, config.run.limit)
    endpoints = endpoints_for(config, [chosen], config.run.agent, _log)
    tracked = tracked_job(config, "run", strategy=chosen.label(), split=config.run.split, agent=config.run.agent)
    # Claimed first: a run directory another process writes to is refused before an endpoint, a tracking run
    # or a progress bar is started.
    held = hold_runs(config, tasks, [chosen])
    with held, endpoints or contextlib.nullcontext(), tracked as tracking:  # an endpoint that fails writes nothing
        with progress_bar(chosen.label(), len(tasks)) as advance:
            result = run_strategy(
                config,
                tasks,
                chosen,
                agent=config.run.agent,
                endpoints=endpoints,
                split=config.run.split,
                on_episode=advance,
            )
        if tracking is not None:
            tracking(RunEvaluated(result, config.run.agent, config.run.split))
    out.print(
        summary_table(
            [(chosen.label(), result.summary)], f"{config.name}: {config.run.split} split, agent={config.run.agent}"
        )
    )
    out.print(f"episodes: {result.directory / 'episodes.jsonl'}")
    if json_path is not None:
        atomic_write_json(
            json_path,
            {
                "summary": {
                    **result.summary,
                    "strategy": chosen.label(),
                    "agent": config.run.agent,
                    "split": config.run.split,
                    "directory": str(result.directory),
                },
                "episodes": [episode_row(e) for e in result.episodes],
            },
        )
    check_scored(result)
    check_caught_up(tracking, "run the same command again")  # last: every result is written first


def check_scored(result: RunResult) -> None:
    """A run none of whose episodes could be scored failed, though its table reads `tasks 0, 0.00`.

    Raised once everything is written: the infrastructure errors are stored, and the next run retries them.
    """
    summary = result.summary
    failed = summary["infra_errors"]
    if summary["scored"] == 0 and failed:
        first = next((e.error for e in result.episodes.summaries if e.error), None) or "no error recorded"
        raise EndpointError(
            f"every episode of {result.strategy.label()} failed on the endpoint ({failed} of {failed}, first: "
            f"{' '.join(first.split())[:160]}); nothing was scored. Fix the endpoint and run again: the episodes in "
            f"{result.directory / 'episodes.jsonl'} are retried"
        )


def compare(
    experiment: Path = typer.Argument(..., help="Experiment config (TOML)."),
    strategies: str = typer.Option(
        ",".join(DETERMINISTIC),
        help=f"Comma-separated: strategy names ({', '.join(STRATEGY_NAMES)}), guideline files (.md, .json) "
        "and registered guidelines (NAME@ALIAS, NAME/VERSION).",
    ),
    registry: str | None = typer.Option(
        None, help="Job directory or tracking URI to read NAME@ALIAS from (default: the config's store)."
    ),
    split: str | None = typer.Option(None, help="train | test | all."),
    limit: int | None = typer.Option(None, help="Run only the first N tasks."),
    agent: str | None = typer.Option(None, help=f"{AGENT_CHOICES}."),
    base_url: str | None = typer.Option(None, "--base-url", help="Use this OpenAI-compatible URL for all roles."),
    model: str | None = typer.Option(None, help="Model name for all roles."),
    json_path: Path | None = typer.Option(None, "--json", help="Write the table as JSON."),
) -> None:
    """Run several strategies on the same tasks and print one comparison table."""
    from optimizer.cli.strategy_specs import strategy_from_spec
    from optimizer.evaluate.strategy_runs import check_tier, endpoints_for, run_strategy, select_tasks
    from optimizer.search.events import RunEvaluated
    from optimizer.tracking import check_caught_up, tracked_job

    if json_path is not None:
        writable_file(json_path, "--json")
    config = load_with_overrides(experiment, split=split, limit=limit, agent=agent, base_url=base_url, model=model)
    chosen = [strategy_from_spec(config, spec.strip(), registry) for spec in strategies.split(",") if spec.strip()]
    for strategy_ in chosen:
        check_tier(strategy_, config.run.agent)
    report_overrides(chosen)
    tasks = select_tasks(config, config.run.split, config.run.limit)
    endpoints = endpoints_for(config, chosen, config.run.agent, _log)
    results = []
    tracked = tracked_job(config, "compare", split=config.run.split, agent=config.run.agent)
    held = hold_runs(config, tasks, chosen)
    with held, endpoints or contextlib.nullcontext(), tracked as tracking:  # an endpoint that fails writes nothing
        for strategy in chosen:
            with progress_bar(strategy.label(), len(tasks)) as advance:
                results.append(
                    run_strategy(
                        config,
                        tasks,
                        strategy,
                        agent=config.run.agent,
                        endpoints=endpoints,
                        split=config.run.split,
                        on_episode=advance,
                    )
                )
            if tracking is not None:
                tracking(RunEvaluated(results[-1], config.run.agent, config.run.split))
    out.print(
        summary_table(
            [(r.strategy.label(), r.summary) for r in results],
            f"{config.name}: {config.run.split} split, agent={config.run.agent}, {len(tasks)} tasks",
        )
    )
    if json_path is not None:
        _write_comparison(json_path, experiment, config, results)
    for result in results:
        check_scored(result)
    check_caught_up(tracking, "run the same command again")


def _write_comparison(path: Path, experiment: Path, config: ExperimentConfig, results: Sequence[RunResult]) -> None:
    """The comparison table as JSON, one row per strategy, with the run directories `acon diff` reads back."""
    atomic_write_json(
        path,
        {
            "rows": [_comparison_row(r) for r in results],
            "experiment_path": str(experiment.resolve()),
            "split": config.run.split,
            "agent": config.run.agent,
            "experiment": config.name,
        },
    )


def _comparison_row(result: RunResult) -> dict[str, Any]:
    summary = result.summary
    return {
        "strategy": result.strategy.label(),
        "tasks": summary["scored"],
        "success": summary["success"],
        "success_ci": summary["success_ci"],
        "peak_tokens_mean": summary["peak_tokens_mean"],
        "peak_tokens_max": summary["peak_tokens_max"],
        "total_tokens": summary["total_tokens"],
        "context_tokens": sum(e.metrics.context_tokens for e in result.episodes),
        "dependency_mean": summary["dependency_mean"],
        "compressor_tokens": summary["compressor_tokens"],
        "recall_calls": summary["recall_calls"],
        "cache_breaks": summary["cache_breaks"],
        "cost_per_success": summary["cost_per_success"],
        "cost_source": summary["cost_source"],
        "infra_errors": summary["infra_errors"],
        "directory": str(result.directory),
        "task_ids": list(result.episodes.task_ids),  # with `directory`: what `acon diff` reads back
    }


def register(app: typer.Typer) -> None:
    app.command("run")(run)
    app.command("compare")(compare)
