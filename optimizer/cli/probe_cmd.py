"""`acon probe position`: is a skill rule that is present in the context followed, by its position?"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.table import Table

from optimizer.cli.console import log_line, plain_console, terminal_width
from optimizer.errors import ConfigError
from optimizer.llm.endpoint import EndpointConfig
from optimizer.storage import atomic_write_json, writable_file

err = plain_console(stderr=True)
out = plain_console(width=max(130, terminal_width()))

probe_app = typer.Typer(help="Behaviour probes: content present in the request, acted on or not.", no_args_is_help=True)


def _log(message: str) -> None:
    err.print(log_line("acon:", message))


@probe_app.command("position")
def position(
    repeats: Annotated[int, typer.Option(min=1, max=50, help="Trials per (length, position), one seed each.")] = 5,
    temperature: Annotated[float, typer.Option(min=0.0, max=2.0, help="Sampling temperature of the agent.")] = 0.3,
    lengths: Annotated[str, typer.Option(help="Comma-separated skill lengths: short, long.")] = "short,long",
    trials_log: Annotated[Path, typer.Option("--log", help="Finished trials (JSONL); a rerun resumes from it.")] = Path(
        "runs/probe/position.jsonl"
    ),
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the summary as JSON.")] = None,
    config: Annotated[Path | None, typer.Option(help="Experiment config (TOML): its agent endpoint.")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="Agent endpoint URL.")] = None,
    model: Annotated[str | None, typer.Option(help="Agent model name.")] = None,
) -> None:
    """Run the model as agent on a refund gated by a rule at the head, middle or tail of a short and a long
    SKILL.md (and without the rule, the control); print compliance per cell with 95 % intervals."""
    from optimizer.evaluate.endpoints import ModelEndpoints
    from optimizer.evaluate.position_probe import LENGTHS, ProbeLog, run_probe, summarize

    if json_path is not None:
        writable_file(json_path, "--json")  # refused before the model runs, not after
    chosen = [name.strip() for name in lengths.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in LENGTHS]
    if unknown or not chosen:
        raise ConfigError(f"--lengths: unknown {unknown or chosen!r}; known: {', '.join(LENGTHS)}")
    agent = _agent_endpoint(config, base_url, model)
    log = ProbeLog(trials_log)
    if log.done:
        _log(f"resuming: {len(log.done)} trials already in {trials_log}")
    started = time.perf_counter()

    def endpoints_for(seed: int) -> ModelEndpoints:
        return ModelEndpoints({"agent": agent.model_copy(update={"seed": seed, "temperature": temperature})}, log=_log)

    def progress(trial) -> None:
        verdict = "complied" if trial.complied else ("no write" if not trial.wrote else "skipped the check")
        present = "" if trial.position == "absent" or trial.present else ", rule NOT in the request"
        _log(f"{trial.length}/{trial.position} seed {trial.seed}: {verdict}{present} ({' > '.join(trial.calls)})")

    # Held open for the whole probe: each trial's own endpoints (its seed) reuse this server and its cache.
    with ModelEndpoints({"agent": agent}, log=_log):
        trials = run_probe(endpoints_for, log, repeats=repeats, lengths=chosen, on_trial=progress)
    rows = summarize(trials)
    out.print(
        _compliance_table(rows, f"probe position: {agent.model}, temperature {temperature}, {repeats} seeds per cell")
    )
    out.print(
        "compliance: the fraud check came before the first refund, among trials whose request carried the rule "
        "(the control: how often the model checks unprompted)"
    )
    if json_path is not None:
        atomic_write_json(
            json_path,
            {
                "probe": "position",
                "date": time.strftime("%Y-%m-%d"),
                "agent": agent.describe(),
                "temperature": temperature,
                "repeats": repeats,
                "cells": rows,
                "trials": [t.__dict__ for t in trials],
                "wall_s": time.perf_counter() - started,
            },
        )
        out.print(f"json: {json_path}")


def _agent_endpoint(config: Path | None, base_url: str | None, model: str | None) -> EndpointConfig:
    """The agent endpoint of `config` with the flags over it, or of the flags alone."""
    if config is not None:
        from optimizer.cli.run_cmd import load_with_overrides

        return load_with_overrides(config, base_url=base_url, model=model).endpoints.agent
    overrides = {k: v for k, v in (("base_url", base_url), ("model", model)) if v}
    try:
        return EndpointConfig.model_validate(overrides)
    except ValidationError as exc:
        raise ConfigError(f"--base-url: {exc.errors()[0]['msg']}") from None


def _compliance_table(rows: list[dict[str, Any]], title: str) -> Table:
    """One row per (length, position) cell: how often the rule, when present, was followed."""
    table = Table(title=title)
    for column in ("length", "position", "skill tokens", "trials", "rule present", "wrote", "compliance", "95 % CI"):
        table.add_column(column, justify="left" if column in ("length", "position") else "right")
    for row in rows:
        rate = "–" if row["compliance"] is None else f"{row['compliance']:.2f}"
        low, high = row["compliance_ci"]
        label = row["position"] if row["position"] != "absent" else "absent (control)"
        present = "–" if row["position"] == "absent" else str(row["present"])
        table.add_row(
            row["length"],
            label,
            f"{row['skill_tokens']:,}",
            str(row["trials"]),
            present,
            str(row["wrote"]),
            rate,
            f"[{low:.2f}, {high:.2f}]",
        )
    return table


def register(app: typer.Typer) -> None:
    app.add_typer(probe_app, name="probe")
