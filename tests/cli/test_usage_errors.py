"""Every bad command line is one `acon: error:` line with a hint and exit 2, never a traceback.

The commands are read from the typer app itself, so a command added later is covered without editing this file.
"""

from __future__ import annotations

import inspect
import typing
from dataclasses import dataclass
from types import NoneType, UnionType

import pytest
import typer
from typer.models import ArgumentInfo, OptionInfo

from optimizer import cli


@dataclass(frozen=True)
class Command:
    path: tuple[str, ...]
    required_arguments: tuple[str, ...]
    typed_options: tuple[tuple[str, type], ...]  # (flag, int or float)


def _base(annotation: object) -> object:
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (typing.Union, UnionType):
        rest = [a for a in typing.get_args(annotation) if a is not NoneType]
        annotation = rest[0] if len(rest) == 1 else annotation
    return annotation


def _parameter(annotation: object, default: object) -> tuple[object, object]:
    """(ArgumentInfo | OptionInfo | None, default) for either declaration style typer accepts."""
    if typing.get_origin(annotation) is typing.Annotated:
        infos = [a for a in typing.get_args(annotation)[1:] if isinstance(a, ArgumentInfo | OptionInfo)]
        if infos:
            return infos[0], default
    if isinstance(default, ArgumentInfo | OptionInfo):
        return default, default.default
    return None, default


def _describe(path: tuple[str, ...], callback) -> Command:
    hints = typing.get_type_hints(callback, include_extras=True)
    required, typed = [], []
    for name, parameter in inspect.signature(callback).parameters.items():
        info, default = _parameter(hints.get(name), parameter.default)
        is_argument = isinstance(info, ArgumentInfo) or info is None
        if is_argument and default in (inspect.Parameter.empty, ...):
            required.append(name)
        base = _base(hints.get(name))
        if isinstance(info, OptionInfo) and base in (int, float):
            flags = [d for d in (info.param_decls or ()) if d.startswith("--")] or [f"--{name.replace('_', '-')}"]
            typed.append((flags[0], base))
    return Command(path, tuple(required), tuple(typed))


def _commands(app: typer.Typer, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], Command]:
    found: dict[tuple[str, ...], Command] = {}
    for info in app.registered_commands:
        name = info.name or info.callback.__name__.replace("_", "-")
        found[(*prefix, name)] = _describe((*prefix, name), info.callback)
    for group in app.registered_groups:
        found.update(_commands(group.typer_instance, (*prefix, group.name)))
    return found


def _groups(app: typer.Typer, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [prefix]
    for group in app.registered_groups:
        out += _groups(group.typer_instance, (*prefix, group.name))
    return out


cli._register()
COMMANDS = _commands(cli.app)
GROUPS = _groups(cli.app)
TYPED = [(c.path, flag, kind) for c in COMMANDS.values() for flag, kind in c.typed_options]
WITH_ARGUMENT = [c.path for c in COMMANDS.values() if c.required_arguments]


def _ids(value: object) -> str:
    return " ".join(value) if isinstance(value, tuple) else str(value)


def test_the_app_is_read_in_full():
    """Guards the introspection: if it found nothing, the tests below would pass vacuously."""
    assert {
        ("run",),
        ("compare",),
        ("optimize",),
        ("export",),
        ("setup",),
        ("models", "start"),
        ("suites", "import"),
    } <= set(COMMANDS)
    assert {("run",), ("optimize",), ("diff",), ("suites", "show")} <= set(WITH_ARGUMENT)
    assert (("run",), "--limit", int) in TYPED and (("ui",), "--port", int) in TYPED


@pytest.fixture
def usage_error(run_cli):
    def check(*args: str, says: tuple[str, ...] = ()) -> str:
        code, _, err = run_cli(*args)
        lines = [line for line in err.splitlines() if line.strip()]
        assert code == 2, err
        assert "Traceback" not in err
        assert len(lines) == 1 and lines[0].startswith("acon: error: "), err
        for text in says:
            assert text in lines[0], lines[0]
        return lines[0]

    return check


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=_ids)
def test_unknown_option(usage_error, path):
    usage_error(*path, "--no-such-option", says=("--no-such-option", f"acon {' '.join(path)} --help"))


@pytest.mark.parametrize("path", sorted(WITH_ARGUMENT), ids=_ids)
def test_missing_argument(usage_error, path):
    usage_error(*path, says=("Missing", f"acon {' '.join(path)} --help"))


@pytest.mark.parametrize(("path", "flag", "kind"), TYPED, ids=_ids)
def test_wrong_type(usage_error, path, flag, kind):
    usage_error(*path, flag, "not-a-number", says=(flag,))


@pytest.mark.parametrize("group", GROUPS, ids=lambda g: " ".join(g) or "acon")
def test_unknown_command(usage_error, group):
    usage_error(*group, "nosuchcmd", says=("nosuchcmd", "--help"))


def test_the_issue_examples(usage_error, tmp_path):
    config = tmp_path / "exp.toml"
    config.write_text('name = "x"\n[suite]\ntype = "smoke"\n')
    usage_error("run", str(config), "--bogus", says=("No such option", "--bogus", "acon run --help"))
    usage_error("run", says=("Missing argument", "acon run --help"))
    usage_error("models", "start", "--model", "x", says=("--model", "acon models start --help"))


@pytest.mark.parametrize("group", GROUPS, ids=lambda g: " ".join(g) or "acon")
def test_a_group_alone_prints_its_help(run_cli, group):
    code, out, err = run_cli(*group)
    assert code in (0, 2) and "Traceback" not in err
    assert "Usage:" in out + err
