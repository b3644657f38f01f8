"""`acon export`: the chosen guideline for production, and compressor pairs for distillation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import typer
from pydantic import ValidationError

from optimizer.cli.guideline_files import EXPECTS, guideline_file
from optimizer.cli.run_cmd import out
from optimizer.context.guideline import Guideline, check_contract
from optimizer.errors import AconError, ConfigError
from optimizer.storage import atomic_write_json, atomic_write_text, writable_file

if TYPE_CHECKING:
    from optimizer.adapters.native_export import NativeExport, NativeFormat
    from optimizer.report.model import Figures
    from optimizer.summary.target_base import SummaryTarget


def chosen_guideline(job_dir: Path) -> Guideline:
    from optimizer.report.file import read_report
    from optimizer.search.job import tier1_rejection
    from optimizer.search.lineage import parts
    from optimizer.search.state import JobDir

    state = JobDir(job_dir).load_state()
    if state is None:
        raise AconError(f"{job_dir}: no state.json; is this an `acon optimize` job directory?")
    version = state.chosen or state.seed
    if version is None or version not in state.candidates:
        raise AconError(f"{job_dir}: the job has not chosen a guideline yet; run `acon optimize --resume`")
    candidate = state.candidates[version]
    report_path = job_dir / "report.json"
    report = read_report(report_path) if report_path.exists() else None
    job = _read(job_dir / "job.json") or {}
    provenance = {
        "job": str(job_dir),
        "experiment": job.get("name"),
        "config_key": job.get("key"),
        "origin": candidate.origin,
        "round": candidate.round,
        "parent": candidate.parent,
        "screens": {name: _scores(s.headline()) for name, s in candidate.screens.items()},
        "parts": [f"{p.origin}{' (LLM)' if p.llm else ''}: {p.change}" for p in parts(state.candidates, version)],
    }
    if tier1_rejection(candidate):
        # An earlier acon chose a candidate tier 1 had rejected when it rejected them all: never hide it.
        provenance["rejected_by"] = f"tier 1 on validation tasks: {candidate.rejected}"
    elif "confirm" in candidate.screens and candidate.origin != "baseline:none":
        # The screens above are tier 0 (the reference agent) but this one: say which agent decided.
        provenance["confirmed_by"] = "tier 1 (the job's agent model, on validation tasks)"
    test = report.chosen.row if report else None
    if test is not None:
        provenance["test"] = _test_figures(test.figures)
    tier1 = report.row(test.strategy, "llm") if report and test is not None else None
    if report is not None and tier1 is not None:
        # A deployer's question is the real agent's verdict: the tier-1 row, full context's beside it, paired.
        none = report.row("none", "llm")
        paired = report.paired_tier1.get("none")
        provenance["test_tier1"] = {
            **_test_figures(tier1.figures),
            "none": _test_figures(none.figures) if none else None,
            "vs_none": paired.to_dict() if paired else None,
        }
    # Candidates inherit the seed's description; an exported file should say what it is.
    description = (
        f"Learned by acon optimize ({provenance['experiment']}): {candidate.origin} candidate of round "
        f"{candidate.round}, derived from {candidate.guideline.name.split('+')[0]}."
    )
    if candidate.origin == "baseline:none":
        description = (
            f"Full context, chosen by acon optimize ({provenance['experiment']}) because no guideline it learned "
            "kept full context's success with the real agent (tier 1): on these tasks, do not compress."
        )
    return candidate.guideline.model_copy(update={"provenance": provenance, "description": description})


def _test_figures(figures: Figures) -> dict[str, Any]:
    return {
        "success": figures.success,
        "success_ci": list(figures.success_ci),
        "peak_tokens_mean": figures.peak_tokens_mean,
        "tasks": figures.tasks,
    }


def guideline_json(guideline: Guideline) -> dict:
    """The JSON form: every field of the guideline plus its derived content version."""
    data = guideline.model_dump(mode="json")
    return {"name": data.pop("name"), "version": guideline.version, **data}


def _scores(scores: dict | None) -> dict | None:
    if not scores:
        return None
    return {k: scores[k] for k in ("success", "peak_tokens_mean", "tasks") if k in scores}


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None


def export(
    job_dir: Path | None = typer.Argument(
        None, help="Job directory of `acon optimize`, or a guideline file (.md or .json) to convert."
    ),
    fmt: str = typer.Option(
        "md",
        "--format",
        help="md (front matter + texts), json, or native settings: anthropic (client.beta.messages.create "
        "kwargs) | openai (client.responses.create kwargs) | langchain (for "
        "optimizer.adapters.langchain.middleware_from), with a per-entry loss report.",
    ),
    out_path: Path | None = typer.Option(None, "--out", help="Where to write the guideline."),
    distill: Path | None = typer.Option(None, help="Also write compressor (input, output) pairs as a Dataset."),
    from_registry: str | None = typer.Option(None, "--from-registry", help="NAME@ALIAS or NAME/VERSION."),
    tracking_uri: str | None = typer.Option(None, help="Tracking URI for --from-registry (default: the job's)."),
    retention: Path | None = typer.Option(
        None,
        help="For anthropic|openai|langchain: JSON tool -> class or "
        "{retention_class, side_effect}, to turn classes into exclude_tools.",
    ),
    allow_unpinned: bool = typer.Option(
        False,
        "--allow-unpinned",
        help="Export a guideline that leaves skills or write receipts unpinned (against the retention "
        "contract; to study that failure).",
    ),
) -> None:
    """Write the chosen guideline (policy + both compressor texts, with provenance), or convert a guideline file."""
    from optimizer.adapters.native_export import FORMATS
    from optimizer.search.summary_job import TARGET_FILE

    if out_path is not None:
        writable_file(out_path, "--out")
    if fmt not in ("md", "json", *FORMATS):
        raise ConfigError(f"--format must be md, json, {', '.join(FORMATS)}, not {fmt!r}")
    if retention is not None and fmt not in FORMATS:
        raise ConfigError(f"--retention applies to --format {'|'.join(FORMATS)} only")
    if job_dir is not None and not job_dir.exists():
        raise ConfigError(f"{job_dir} does not exist; export expects {EXPECTS}")
    if job_dir is not None and not job_dir.is_dir():
        if from_registry is not None or distill is not None:
            raise ConfigError(f"--from-registry and --distill need a job directory, not the file {job_dir}")
        guideline = guideline_file(job_dir)
    elif from_registry is not None:
        from optimizer.tracking import load_from_registry, resolve_uri

        uri = tracking_uri or (resolve_uri(job_dir) if job_dir else None)
        if uri is None:
            raise ConfigError("--from-registry needs a job directory or --tracking-uri")
        guideline = load_from_registry(from_registry, uri, provenance=True)
    elif job_dir is not None and (job_dir / TARGET_FILE).is_file():
        _export_target(job_dir, fmt, out_path, distill=distill, retention=retention)
        return
    elif job_dir is not None:
        guideline = chosen_guideline(job_dir)
    else:
        raise ConfigError("give a job directory or --from-registry NAME@ALIAS")
    source = str(job_dir) if job_dir is not None else from_registry
    note = check_contract(guideline, source=source, allow_unpinned=allow_unpinned, override="pass --allow-unpinned")
    if note is not None:
        typer.echo(f"acon: {note}", err=True)
    _write(_native(guideline, fmt, retention) if fmt in FORMATS else _plain(guideline, fmt), out_path, guideline)
    if distill is not None:
        if job_dir is None:
            raise ConfigError("--distill needs a job directory")
        from optimizer.search.distill import distillation_dataset

        dataset = distillation_dataset(job_dir, guideline.version)
        if len(dataset) == 0:
            raise AconError(f"{job_dir}: no compressor calls in successful episodes of {guideline.version}")
        dataset.save_to_disk(str(distill))
        atomic_write_json(distill / "acon.json", {"guideline": guideline.version, "rows": len(dataset)})
        out.print(f"wrote {len(dataset)} compressor pairs to {distill}")


def _plain(guideline: Guideline, fmt: str) -> str:
    return guideline.to_markdown() if fmt == "md" else json.dumps(guideline_json(guideline), indent=2)


def _write(text: str, out_path: Path | None, guideline: Guideline) -> None:
    if out_path is None:
        typer.echo(text.rstrip("\n"))  # verbatim: a rich console would wrap long lines and break the JSON
    else:
        atomic_write_text(out_path, text if text.endswith("\n") else text + "\n")
        out.print(f"wrote {out_path} ({guideline.name}@{guideline.version})")


def target_job(job_dir: Path) -> tuple[SummaryTarget, Guideline]:
    """A summary-target job's learned text: the target strategy that ran it, and the guideline file it wrote."""
    from optimizer.search.summary_job import TARGET_FILE
    from optimizer.summary.targets import TARGETS

    path = job_dir / TARGET_FILE
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError):
        data = None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} is damaged (not a JSON object); run the job again with another --out")
    try:
        config = TARGETS.adapter().validate_python(data["target"])
        strategy = config.strategy(str(data["text"]))
        written = job_dir / str(data["guideline"])
        guideline = Guideline.from_markdown(written.read_text(), source=str(written))
    except (KeyError, TypeError, ValidationError, FileNotFoundError) as exc:
        raise ConfigError(f"{path} is damaged ({type(exc).__name__}); run the job again with another --out") from None
    if guideline.version != data.get("version") or guideline.history != strategy.instruction_text().strip():
        raise ConfigError(f"{path}: the guideline file {written} is not the text the job learned")
    return strategy, guideline


def _export_target(
    job_dir: Path, fmt: str, out_path: Path | None, *, distill: Path | None, retention: Path | None
) -> None:
    """The learned text in its target's own form (`--format` = the target), or as a guideline file (md, json)."""
    from optimizer.summary.export import export_target

    strategy, guideline = target_job(job_dir)
    if distill is not None or retention is not None:
        raise ConfigError(
            f"{job_dir} learned summary instructions for the {strategy.target} target: --distill and --retention "
            "apply to a guideline job"
        )
    if fmt in ("md", "json"):
        _write(_plain(guideline, fmt), out_path, guideline)
        return
    if fmt != strategy.target:
        raise ConfigError(
            f"{job_dir} learned summary instructions for the {strategy.target} target, measured there only: "
            f"export --format {strategy.target} (or md, json), not {fmt}"
        )
    # Not silent: the target summarizes skills and receipts with the rest; the contract lives in the text.
    typer.echo(
        f"{fmt}: the {strategy.target} summarizer cannot pin a class; the learned text carries the retention "
        "contract's must-keep rules (appended by code)",
        err=True,
    )
    _write(_render_native(export_target(strategy), fmt), out_path, guideline)


def _native(guideline: Guideline, fmt: str, retention: Path | None) -> str:
    from optimizer.adapters.native_export import export_native
    from optimizer.runtime.retention_map import read_retention_file

    # `fmt` is one of FORMATS: the command checked it.
    exported = export_native(
        guideline, cast("NativeFormat", fmt), read_retention_file(retention) if retention else None
    )
    return _render_native(exported, fmt)


def _render_native(exported: NativeExport, fmt: str) -> str:
    for verdict in exported.verdicts:  # a lossy export is never silent; one unwrapped line per entry
        typer.echo(f"{fmt}: {verdict.entry}: {verdict.status.replace('_', ' ')}: {verdict.note}", err=True)
    for warning in exported.warnings:
        typer.echo(f"{fmt}: warning: {warning}", err=True)
    if exported.lossy:
        typer.echo(f"{fmt}: lossy export; the full guideline runs only through optimizer.runtime", err=True)
    call = {"anthropic": "client.beta.messages.create", "openai": "client.responses.create"}.get(fmt)
    if call is not None:  # pasteable: call(model=..., ..., **this)
        typer.echo(f"{fmt}: keyword arguments of {call}, from {exported.guideline}", err=True)
        return json.dumps(exported.settings, indent=2)
    typer.echo(f"{fmt}: build it with optimizer.adapters.langchain.middleware_from(path, model=...)", err=True)
    return json.dumps(exported.to_dict(), indent=2)


def register(app: typer.Typer) -> None:
    app.command("export")(export)
