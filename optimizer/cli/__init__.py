"""The `acon` command line. One module per command group; errors are one line and a non-zero exit."""

from __future__ import annotations

import sys

import typer

from optimizer import _offline as _offline
from optimizer.cli.library_logs import show_library_logs
from optimizer.errors import AconError
from optimizer.interrupts import exit_cleanly_on_sigterm, exit_now, stopping

app = typer.Typer(
    name="acon",
    help="Learn context-compression guidelines for LLM agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
INTERRUPTED = "acon: interrupted; finished episodes are saved, rerun to resume"


@app.callback()
def _options(
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="Also show the INFO lines of the libraries acon drives (MLflow, DSPy, ...)."
    ),
) -> None:
    show_library_logs(verbose)


def _register() -> None:
    from optimizer.cli import (
        canary_cmd,
        diff_cmd,
        export_cmd,
        models_cmd,
        optimize_cmd,
        probe_cmd,
        run_cmd,
        suites_cmd,
        ui_cmd,
    )

    models_cmd.register(app)
    run_cmd.register(app)
    optimize_cmd.register(app)
    diff_cmd.register(app)
    export_cmd.register(app)
    ui_cmd.register(app)
    canary_cmd.register(app)
    probe_cmd.register(app)
    suites_cmd.register(app)


def main() -> None:
    exit_cleanly_on_sigterm()
    try:
        _register()  # imports the registries: a broken plugin is a one-line error here, not a traceback
        app(standalone_mode=False, prog_name="acon")  # hints name `acon` under `python -m optimizer` too
        if stopping():
            # Ctrl-C: typer turns the KeyboardInterrupt into a returned 130 in this mode, which exited 0.
            raise KeyboardInterrupt
    except AconError as exc:
        print(f"acon: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        exit_now(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(1)
    except SystemExit as exc:
        if stopping():  # SIGTERM
            print(INTERRUPTED, file=sys.stderr)
            if isinstance(exc.code, int):
                exit_now(exc.code)
        raise
    except usage_errors() as exc:  # bad command lines surface here in non-standalone mode
        if type(exc).__name__ == "NoArgsIsHelpError" and hasattr(
            exc, "show"
        ):  # `acon` or `acon models` alone: the help is the answer
            exc.show()
        else:
            print(usage_message(exc), file=sys.stderr)
        sys.exit(getattr(exc, "exit_code", 2))


def usage_errors() -> tuple[type[Exception], ...]:
    """What typer raises for a bad command line, whichever click it runs on.

    typer 0.29 vendors its own click (`typer._click`), whose errors derive from `typer.TyperException` and not
    from the installed `click.ClickException`; older typer raises the real click's.
    """
    types: list[type[Exception]] = []
    if hasattr(typer, "TyperException"):
        types.append(typer.TyperException)
    try:
        import click
    except ImportError:  # typer >= 0.29 does not need it
        pass
    else:
        types.append(click.ClickException)
    return tuple(types)


def usage_message(exc: Exception) -> str:
    """One line: click's message, and where to look for the right usage."""
    format_message = getattr(exc, "format_message", None)
    text = " ".join((format_message() if format_message else str(exc)).split())
    ctx = getattr(exc, "ctx", None)
    if ctx is not None:
        text += f" (try '{ctx.command_path} --help')"
    return f"acon: error: {text}"
