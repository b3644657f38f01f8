"""`acon setup` and `acon models status|start|stop`: the embedded local model."""

from __future__ import annotations

import typer
from rich.table import Table

from optimizer.cli.console import log_line, plain_console
from optimizer.llm.local import PROFILES, get_profile, server_status, start_detached, stop_server
from optimizer.llm.local.endpoint import DEFAULT_PORT, endpoint_status, start_endpoint, stop_endpoint
from optimizer.llm.local.install import build_server, install_model, model_ready, server_binary
from optimizer.llm.local.profiles import DEFAULT_PROFILE, SETUP_PROFILES

console = plain_console(stderr=True)
models = typer.Typer(help="Manage the embedded local model server.", no_args_is_help=True)


def _log(message: str) -> None:
    console.print(log_line("acon:", message))


def setup(
    model: list[str] = typer.Option(list(SETUP_PROFILES), "--model", help="Model profile(s) to install (repeatable)."),
    bfcl: bool = typer.Option(True, help="Also install the BFCL multi-turn suite (bfcl-eval, no deps)."),
) -> None:
    """Install everything the embedded default needs: model weights (hash-checked) and llama-server."""
    for name in model:
        install_model(get_profile(name), log=_log)
    build_server(log=_log)
    if bfcl:
        from tasks.bfcl.install import ensure_installed

        ensure_installed(log=_log)
    _log("setup complete")


@models.command("status")
def status() -> None:
    """Installed models, the server binary, and running servers."""
    table = Table("profile", "installed", "server", "description")
    for name, profile in PROFILES.items():
        state = server_status(name)
        running = f"running on {state.base_url} (pid {state.pid})" if state else "stopped"
        table.add_row(name, "yes" if model_ready(profile) else "no", running, profile.description)
    plain_console().print(table)
    binary = server_binary()
    plain_console().print(f"llama-server: {binary if binary else 'not built (run `acon setup`)'}")
    endpoint = endpoint_status()
    plain_console().print(f"endpoint: {endpoint.base_url if endpoint else 'stopped'}")


@models.command("start")
def start(
    model: str = typer.Argument(DEFAULT_PROFILE, help="Model profile."),
    port: int = typer.Option(DEFAULT_PORT, "--port", help="Port of the local endpoint (all running models)."),
) -> None:
    """Start a model server and the local endpoint; both stay up until `acon models stop`; jobs reuse them.

    Prints the endpoint's URL: point any OpenAI-compatible client at it (tool calls come back as
    `tool_calls`). Each model's own llama-server listens on a free port of its own.
    """
    state = start_detached(model, log=_log)
    endpoint = start_endpoint(port, log=_log)
    _log(f"{model}: llama-server {state.base_url} (pid {state.pid})")
    plain_console().print(endpoint.base_url)


@models.command("stop")
def stop(model: str = typer.Argument(DEFAULT_PROFILE, help="Model profile.")) -> None:
    """Stop a profile's server, and the local endpoint once no model is left running."""
    plain_console().print(f"{model}: {'stopped' if stop_server(model) else 'was not running'}")
    if not any(server_status(name) for name in PROFILES) and stop_endpoint():
        plain_console().print("endpoint: stopped")


def register(app: typer.Typer) -> None:
    app.command("setup")(setup)
    app.add_typer(models, name="models")
