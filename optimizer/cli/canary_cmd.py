"""`acon canary`: which planted identifiers survive each strategy, at each of the five checkpoints."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from pydantic import ValidationError
from rich.table import Table
from rich.text import Text

from optimizer.cli.console import log_line, plain_console, terminal_width
from optimizer.context.strategies import STRATEGY_NAMES, NoCompression, parse_strategy
from optimizer.errors import ConfigError
from optimizer.llm.endpoint import EndpointConfig
from optimizer.storage import atomic_write_json, writable_file

if TYPE_CHECKING:
    from optimizer.context.strategies.base import ContextStrategy
    from optimizer.evaluate.canary import CanaryReport, StrategyResult

err = plain_console(stderr=True)
out = plain_console(width=max(150, terminal_width()))


# The control's name from its class: the canary module (and the agent loop under it) loads past `--help`.
CONTROL = NoCompression.model_fields["type"].default
STRATEGY_HELP = f"all | {' | '.join(STRATEGY_NAMES)} (`{CONTROL}` always runs: it is the control)."
CONFIG_HELP = "Experiment config (TOML): its compressor endpoint and strategy settings."


def _log(message: str) -> None:
    err.print(log_line("acon:", message))


def _strategies(name: str, config_path: Path | None) -> dict[str, ContextStrategy]:
    names = list(STRATEGY_NAMES) if name == "all" else [name]
    unknown = [n for n in names if n not in STRATEGY_NAMES]
    if unknown:
        raise ConfigError(f"unknown strategy {unknown[0]!r} (choose from: all, {', '.join(STRATEGY_NAMES)})")
    if config_path is None:
        return {n: parse_strategy(n) for n in names}
    from optimizer.config import load_experiment
    from optimizer.evaluate.strategy_runs import strategy_named

    config = load_experiment(config_path)
    return {n: strategy_named(config, n) for n in names}


def _compressor_endpoint(config_path: Path | None, base_url: str | None, model: str | None) -> EndpointConfig:
    if config_path is not None:
        from optimizer.cli.run_cmd import load_with_overrides

        return load_with_overrides(config_path, base_url=base_url, model=model).endpoints.compressor
    overrides = {k: v for k, v in (("base_url", base_url), ("model", model)) if v}
    try:
        return EndpointConfig.model_validate(overrides)
    except ValidationError as exc:
        raise ConfigError(f"--base-url: {exc.errors()[0]['msg']}") from None


def _cell(result: StrategyResult, identifier: str) -> Text:
    lost = result.lost_at(identifier)
    return Text("kept", style="green") if lost is None else Text(f"lost@{lost}", style="red")


def report_tables(report: CanaryReport) -> tuple[Table, Table]:
    survival = Table(title="canary: identifiers at the final step (lost@N = first checkpoint without it)")
    survival.add_column("strategy")
    for identifier in report.identifiers:
        survival.add_column(identifier, justify="center")
    survival.add_column("reduction", justify="right")
    for result in report.results.values():
        cells = [_cell(result, i) for i in report.identifiers]
        survival.add_row(result.name, *cells, f"{result.reduction:.0%}")
    tokens = Table(
        title="canary: tokens at the final step (1 = raw tool results only; 5 = the request sent, "
        "system prompt excluded)"
    )
    tokens.add_column("strategy")
    tokens.add_column("label")
    for number in range(1, 6):
        tokens.add_column(f"checkpoint {number}", justify="right")
    tokens.add_column("compressor calls", justify="right")
    for result in report.results.values():
        tokens.add_row(
            result.name,
            result.label,
            *(f"{result.checkpoints[n].tokens:,}" for n in range(1, 6)),
            str(result.episode.metrics.compressor_calls),
        )
    return survival, tokens


def canary(
    strategy: Annotated[str, typer.Option(help=STRATEGY_HELP)] = "all",
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the report as JSON.")] = None,
    config: Annotated[Path | None, typer.Option(help=CONFIG_HELP)] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="Compressor endpoint URL.")] = None,
    model: Annotated[str | None, typer.Option(help="Compressor model name.")] = None,
) -> None:
    """Run the fixed canary conversation under each strategy; show which identifiers survive where."""
    if json_path is not None:
        writable_file(json_path, "--json")  # refused before the model runs, not after
    from optimizer.context.compressor import Compressor
    from optimizer.evaluate.canary import run_canary
    from optimizer.evaluate.endpoints import ModelEndpoints

    strategies = _strategies(strategy, config)
    endpoint = _compressor_endpoint(config, base_url, model)
    needs_model = any(s.uses_compressor for s in strategies.values())
    endpoints = ModelEndpoints({"compressor": endpoint}, log=_log) if needs_model else None
    with endpoints or contextlib.nullcontext():
        compressor = None
        if endpoints is not None:
            compressor = Compressor(endpoints.client("compressor"), endpoints.response_cache())
            _log(f"compressor: {endpoint.base_url} {endpoint.model}")

        def progress(result: StrategyResult) -> None:
            _log(
                f"{result.name}: {result.checkpoints[5].tokens:,} tokens at checkpoint 5, "
                f"{result.episode.metrics.compressor_calls} compressor calls"
            )

        report = run_canary(strategies, compressor=compressor, on_result=progress)
    for table in report_tables(report):
        out.print(table)
    if json_path is not None:
        atomic_write_json(json_path, report.to_json())
        out.print(f"json: {json_path}")


def register(app: typer.Typer) -> None:
    app.command("canary")(canary)
