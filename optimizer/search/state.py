"""The job directory: config fingerprint, checkpointed state, per-round artifacts. All writes atomic."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from optimizer.config import ExperimentConfig
from optimizer.errors import ConfigError
from optimizer.evaluate.runner import run_key
from optimizer.storage import atomic_write_json, atomic_write_text


def config_key(config: ExperimentConfig) -> str:
    """What must match for `--resume`: everything except output location and tracking."""
    data = config.model_dump(mode="json", exclude={"out", "tracking"})
    return run_key(data)


class JobDir:
    def __init__(self, path: Path) -> None:
        self.path = path

    def claim(self, config: ExperimentConfig, *, resume: bool) -> dict[str, Any] | None:
        """Create the job or check that a resumed one is the same job. Returns saved state, if any.

        A job whose `state.json` was never written (its endpoints did not answer, say) never started: the
        directory is claimed again, by this config, with or without `--resume`.
        """
        job_file = self.path / "job.json"
        key = config_key(config)
        started = (self.path / "state.json").exists()
        if job_file.exists():
            try:
                saved = json.loads(job_file.read_text())
            except json.JSONDecodeError:
                raise ConfigError(f"{job_file} is corrupt; move the directory aside") from None
            if saved.get("key") != key and started:
                raise ConfigError(
                    f"{self.path} holds a job of a different config ({saved.get('name')}, key {saved.get('key')}); "
                    "use another --out"
                )
            if started and not resume:
                raise ConfigError(f"{self.path} already holds this job; pass --resume to continue it")
            if started:
                return self.load_state()
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

    def load_state(self) -> dict[str, Any] | None:
        path = self.path / "state.json"
        try:
            state = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            # Written atomically, so only damage from outside gets here; guessing would misreport the budget.
            raise ConfigError(f"{path} is damaged ({type(exc).__name__}); restore it or move the job aside") from None
        if not isinstance(state, dict):
            raise ConfigError(f"{path} is damaged (not a JSON object); restore it or move the job aside")
        return state

    def save_state(self, state: dict[str, Any]) -> None:
        atomic_write_json(self.path / "state.json", state)

    def round_dir(self, round_index: int) -> Path:
        path = self.path / "rounds" / f"{round_index:02d}"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def write_json(self, relative: str, data: Any) -> Path:
        path = self.path / relative
        atomic_write_json(path, data)
        return path

    def write_text(self, relative: str, text: str) -> Path:
        path = self.path / relative
        atomic_write_text(path, text)
        return path

    def read_json(self, relative: str) -> Any | None:
        """A checkpoint file, or None when it is absent or damaged (the step that writes it is redone)."""
        try:
            return json.loads((self.path / relative).read_text())
        except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
            return None
