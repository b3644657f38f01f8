"""The job's state and its directory: config fingerprint, checkpointed state, per-round artifacts.

`SearchState` is typed and carries its own codec (`to_dict` / `from_dict`, with a format number): a job
directory written by another format is refused in one line rather than half-read. All writes are atomic.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from optimizer.errors import AconError, ConfigError
from optimizer.evaluate.runner import run_key
from optimizer.jsontypes import (
    JSON,
    JSONObject,
    JSONRecord,
    dict_of,
    dict_of_records,
    flag,
    integer,
    list_of,
    list_of_records,
    number,
    optional_text,
    text,
)
from optimizer.report.model import RoundSummary
from optimizer.search.candidate import Candidate
from optimizer.storage import atomic_write_json, atomic_write_text

if TYPE_CHECKING:
    from optimizer.config import ExperimentConfig

STATE_FORMAT = 2
# Each search's checkpoint: a directory holding either belongs to a job that started.
CHECKPOINTS = ("state.json", "summary_search.json")


@dataclass
class SearchState:
    """The search's checkpoint (`state.json`): candidates, rounds, selection and spending so far."""

    seed: str | None = None
    candidates: dict[str, Candidate] = field(default_factory=dict)
    rounds: list[RoundSummary] = field(default_factory=list)
    # Train tasks an LLM-compressing candidate is screened on first (fixed once, after the warm start).
    subset: list[str] = field(default_factory=list)
    # Selection on the validation split: every shortlisted version's val scores live in its candidate.
    shortlist: list[str] = field(default_factory=list)
    chosen: str | None = None
    optimizer_tokens: int = 0
    # Optimizer tokens of each checkpointed step: a step redone after a crash replaces its count.
    step_tokens: dict[str, int] = field(default_factory=dict)
    stopped: str | None = None
    search_done: bool = False
    # Seconds the job has run, over every resume (the time between a kill and its resume is not counted).
    wall_s: float = 0.0
    # What tier 1 said of the confirmed candidates: "confirmed" (one kept full context's success),
    # "rejected" (none did; the choice is full context), "unconfirmed" (the budget ran out first; full context),
    # None (tier 1 off or not reached).
    tier1_verdict: str | None = None

    @property
    def round(self) -> int:
        return max((r.round for r in self.rounds), default=0)

    def to_dict(self) -> JSONObject:
        return {
            "format": STATE_FORMAT,
            "seed": self.seed,
            "candidates": {v: c.to_dict() for v, c in self.candidates.items()},
            "rounds": [asdict(r) for r in self.rounds],
            "subset": self.subset,
            "shortlist": self.shortlist,
            "chosen": self.chosen,
            "optimizer_tokens": self.optimizer_tokens,
            "step_tokens": self.step_tokens,
            "stopped": self.stopped,
            "search_done": self.search_done,
            "wall_s": round(self.wall_s, 3),
            "tier1_verdict": self.tier1_verdict,
        }

    @classmethod
    def from_dict(cls, data: JSONRecord, *, source: str = "state.json") -> SearchState:
        if data.get("format") != STATE_FORMAT:
            raise ConfigError(
                f"{source} was written by another acon (state format {data.get('format', 1)}, this one reads "
                f"{STATE_FORMAT}); start the job again with another --out"
            )
        try:
            state = cls(
                seed=optional_text(data["seed"]),
                candidates=dict_of_records(data["candidates"], Candidate.from_dict),
                rounds=list_of_records(data["rounds"], RoundSummary.from_dict),
                subset=list_of(data["subset"], text),
                shortlist=list_of(data["shortlist"], text),
                chosen=optional_text(data["chosen"]),
                optimizer_tokens=integer(data["optimizer_tokens"]),
                step_tokens=dict_of(data["step_tokens"], integer),
                stopped=optional_text(data["stopped"]),
                search_done=flag(data["search_done"]),
                wall_s=float(number(data.get("wall_s", 0.0))),  # absent in states written before it was measured
                tier1_verdict=optional_text(data.get("tier1_verdict")),
            )
        except (KeyError, TypeError, ValueError, AttributeError, AconError) as exc:
            # Written atomically, so a wrong shape is damage from outside; a guess would misreport the search.
            raise ConfigError(
                f"{source} is damaged ({type(exc).__name__}: {exc}); restore it or move the job aside"
            ) from None
        return state


def config_key(config: ExperimentConfig) -> str:
    """What must match for `--resume`: everything except output location and tracking."""
    data = config.model_dump(mode="json", exclude={"out", "tracking"})
    return run_key(data)


class JobDir:
    def __init__(self, path: Path) -> None:
        self.path = path

    def claim(self, config: ExperimentConfig, *, resume: bool, started_by: str = "state.json") -> SearchState | None:
        """Create the job or check that a resumed one is the same job. Returns saved state, if any.

        A job whose `started_by` checkpoint was never written (its endpoints did not answer, say) never
        started: the directory is claimed again, by this config, with or without `--resume`. The guideline
        search checkpoints `state.json`; the summary-instruction search its own file (no state is returned).
        """
        job_file = self.path / "job.json"
        key = config_key(config)
        started = (self.path / started_by).exists()
        other_started = any((self.path / name).exists() for name in CHECKPOINTS)
        if job_file.exists():
            try:
                saved = json.loads(job_file.read_text())
            except json.JSONDecodeError:
                raise ConfigError(f"{job_file} is corrupt; move the directory aside") from None
            if saved.get("key") != key and other_started:
                raise ConfigError(
                    f"{self.path} holds a job of a different config ({saved.get('name')}, key {saved.get('key')}); "
                    "use another --out"
                )
            if started and not resume:
                raise ConfigError(f"{self.path} already holds this job; pass --resume to continue it")
            if started:
                return self.load_state() if started_by == "state.json" else None
        elif resume:
            raise ConfigError(f"nothing to resume in {self.path} (no job.json)")
        self._check_writable()
        atomic_write_json(job_file, {"key": key, "name": config.name, "config": config.model_dump(mode="json")})
        return None

    def _check_writable(self) -> None:
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            probe = self.path / ".write-probe"
            probe.write_text("")
            probe.unlink()
        except OSError as exc:
            raise ConfigError(f"output directory {self.path} is not writable ({exc.strerror})") from None

    def load_state(self) -> SearchState | None:
        path = self.path / "state.json"
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            # Written atomically, so only damage from outside gets here; guessing would misreport the budget.
            raise ConfigError(f"{path} is damaged ({type(exc).__name__}); restore it or move the job aside") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path} is damaged (not a JSON object); restore it or move the job aside")
        return SearchState.from_dict(data, source=str(path))

    def save_state(self, state: SearchState) -> None:
        atomic_write_json(self.path / "state.json", state.to_dict())

    def round_dir(self, round_index: int) -> Path:
        path = self.path / "rounds" / f"{round_index:02d}"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def write_json(self, relative: str, data: JSON) -> Path:
        path = self.path / relative
        atomic_write_json(path, data)
        return path

    def write_text(self, relative: str, text: str) -> Path:
        path = self.path / relative
        atomic_write_text(path, text)
        return path

    def read_json(self, relative: str) -> JSON:
        """A checkpoint file, or None when it is absent or damaged (the step that writes it is redone)."""
        try:
            data: JSON = json.loads((self.path / relative).read_text())
        except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
            return None
        return data
