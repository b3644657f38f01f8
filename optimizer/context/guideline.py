"""Guideline files: a retention policy (front matter) plus the two compressor instructions (body).

```
---
name: seed
policy:
  pinned: [skill, write_receipt]
  write:
    - {move: compress, classes: [static], over: 1024, max_tokens: 160}
  history:
    - {move: summarize, classes: [static, dynamic_state, error_partial], over: 2048, keep_last: 2}
---
## History compressor
...
## Observation compressor
...
```
The version is a content hash, so identical guidelines share compressor caches and registry entries.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import json
import re
from pathlib import Path
from typing import Annotated, Any, get_args

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from optimizer.context.moves import CompressorTexts, HistoryMoveConfig, WriteMoveConfig
from optimizer.context.policy import RetentionPolicy
from optimizer.errors import ConfigError

HISTORY_HEADING = "## History compressor"
OBSERVATION_HEADING = "## Observation compressor"
_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n?(.*)\Z", re.DOTALL)
# The largest shipped front matter is under 2,000 characters; a bound keeps a hostile file from costing
# minutes of parsing before it is refused.
MAX_FRONT_MATTER = 64_000


class _NoAliasLoader(yaml.SafeLoader):  # type: ignore[misc]  # yaml ships no types here
    """YAML without aliases: a few lines of nested `*ref`s expand to gigabytes once walked (a "billion
    laughs" bomb), and no guideline needs to repeat a node by reference."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, f"aliases are not allowed (found *{event.anchor})", event.start_mark
            )
        return super().compose_node(parent, index)


PROJECT_ROOT = Path(__file__).resolve().parents[2]
# The seed and learned guidelines ship inside the package (`optimizer/guidelines/`, which the checkout's
# top-level `guidelines/` links to), so an installed acon finds them outside any checkout.
PACKAGED_GUIDELINES = Path(str(importlib.resources.files("optimizer") / "guidelines"))
_MOVE_TAGS = frozenset(
    cls.model_fields["move"].default
    for union in (WriteMoveConfig, HistoryMoveConfig)
    for cls in get_args(get_args(union)[0])
)
SEED_GUIDELINE = PACKAGED_GUIDELINES / "seed" / "seed.md"


class Guideline(BaseModel):
    """A versioned guideline. `provenance` records where a learned one came from (job, round, scores)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "guideline"
    description: str = ""
    policy: RetentionPolicy = Field(default_factory=RetentionPolicy)
    history: str = Field(..., min_length=1, description="Instruction for the history compressor.")
    observation: str = Field(..., min_length=1, description="Instruction for the observation compressor.")
    provenance: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _strip(self) -> Guideline:
        object.__setattr__(self, "history", self.history.strip())
        object.__setattr__(self, "observation", self.observation.strip())
        return self

    @property
    def version(self) -> str:
        payload = json.dumps(
            {"policy": self.policy.model_dump(mode="json"), "history": self.history, "observation": self.observation},
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:12]

    @property
    def texts(self) -> CompressorTexts:
        return CompressorTexts(self.history, self.observation, self.version)

    def to_markdown(self) -> str:
        front = {
            "name": self.name,
            "description": self.description,
            "version": self.version,
            "policy": self.policy.model_dump(mode="json"),
        }
        if self.provenance:
            front["provenance"] = self.provenance
        header = yaml.safe_dump(front, sort_keys=False, allow_unicode=True).strip()
        body = f"{HISTORY_HEADING}\n\n{self.history}\n\n{OBSERVATION_HEADING}\n\n{self.observation}\n"
        return f"---\n{header}\n---\n{body}"

    @classmethod
    def from_markdown(cls, text: str, *, source: str = "<text>") -> Guideline:
        match = _FRONT_MATTER.match(text.removeprefix("\ufeff").replace("\r\n", "\n"))
        if match is None:
            raise ConfigError(f"{source}: guideline has no front matter (expected a leading '---' block)")
        if len(match.group(1)) > MAX_FRONT_MATTER:
            raise ConfigError(
                f"{source}: front matter of {len(match.group(1)):,} characters; at most {MAX_FRONT_MATTER:,}"
            )
        try:
            front = yaml.load(match.group(1), Loader=_NoAliasLoader) or {}
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" line {mark.line + 2}" if mark else ""
            raise ConfigError(f"{source}:{where} broken front matter: {getattr(exc, 'problem', exc)}") from None
        if not isinstance(front, dict):
            raise ConfigError(f"{source}: front matter must be a mapping")
        front.pop("version", None)  # derived, never trusted from the file
        body = match.group(2)
        if HISTORY_HEADING not in body or OBSERVATION_HEADING not in body:
            raise ConfigError(f"{source}: body needs '{HISTORY_HEADING}' and '{OBSERVATION_HEADING}' sections")
        for heading in (HISTORY_HEADING, OBSERVATION_HEADING):
            if len(re.findall(f"^{heading}[ \t]*$", body, re.MULTILINE)) > 1:
                # the second would be read as compressor text, its instruction running under the other heading
                raise ConfigError(f"{source}: '{heading}' appears more than once; each section once")
        history, observation = _split_body(body)
        try:
            return cls(**front, history=history, observation=observation)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(p) for p in error["loc"] if p not in _MOVE_TAGS)  # `history.0.classes`
            raise ConfigError(f"{source}: {where}: {error['msg']}") from None


def _split_body(body: str) -> tuple[str, str]:
    history_at = body.index(HISTORY_HEADING)
    observation_at = body.index(OBSERVATION_HEADING)
    if history_at < observation_at:
        history = body[history_at + len(HISTORY_HEADING) : observation_at]
        observation = body[observation_at + len(OBSERVATION_HEADING) :]
    else:
        observation = body[observation_at + len(OBSERVATION_HEADING) : history_at]
        history = body[history_at + len(HISTORY_HEADING) :]
    return history.strip(), observation.strip()


def resolve_path(path: str | Path) -> Path:
    """Relative paths resolve against the working directory, then the project root, then the packaged
    guidelines (`guidelines/seed/seed.md` names the seed wherever acon is installed)."""
    candidate = Path(path)
    if candidate.is_absolute() or candidate.exists():
        return candidate
    rooted = PROJECT_ROOT / candidate
    if rooted.exists():
        return rooted
    if candidate.parts[:1] == ("guidelines",):
        packaged = PACKAGED_GUIDELINES.joinpath(*candidate.parts[1:])
        if packaged.exists():
            return packaged
    return candidate


def read_guideline(path: str | Path) -> Guideline:
    resolved = resolve_path(path)
    try:
        text = resolved.read_text()
    except FileNotFoundError:
        raise ConfigError(f"guideline file not found: {path}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: guideline is not UTF-8 text") from None
    return Guideline.from_markdown(text, source=str(path))


@functools.lru_cache(maxsize=64)
def _load_cached(path: str, mtime_ns: int) -> Guideline:
    return read_guideline(path)


def guideline_at(path: str | Path) -> Guideline:
    """`read_guideline`, memoized per file content so strategies can call it on every step."""
    resolved = resolve_path(path)
    try:
        mtime = resolved.stat().st_mtime_ns
    except FileNotFoundError:
        raise ConfigError(f"guideline file not found: {path}") from None
    return _load_cached(str(resolved), mtime)


def contract_breach(guideline: Guideline) -> str | None:
    """What a guideline leaves unpinned that the retention contract pins, in words (None: nothing)."""
    unpinned = guideline.policy.unpinned_required()
    if not unpinned:
        return None
    names = " and ".join(c.value for c in unpinned)
    return f"guideline {guideline.name}@{guideline.version} leaves {names} unpinned, so a summary may cut them"


def check_contract(guideline: Guideline, *, source: str | None, allow_unpinned: bool, override: str) -> str | None:
    """Refuse a guideline that unpins a class the contract pins, unless `allow_unpinned`; then the note to report.

    The contract bounds every move whatever a guideline says: a summary is lossy, so a skill or a write
    receipt handed to one can lose the rule or the id the task depends on. Running such a guideline is for
    studying that failure (acon's planted example, the plain-ACON baselines), and says so wherever it runs.
    `override` names how the user grants it (a config key, a keyword, a flag).
    """
    breach = contract_breach(guideline)
    if breach is None:
        return None
    if not allow_unpinned:
        where = f"{source}: " if source else ""
        raise ConfigError(
            f"{where}{breach}; the retention contract never cuts skills or write receipts: pin them "
            f"(policy.pinned), or {override} to study the failure"
        )
    return f"contract override ({override}): {breach}"


def _loadable(path: str) -> str:
    guideline_at(path)  # a missing or broken file fails when the config is read, not mid-episode
    return path


GuidelinePath = Annotated[str, AfterValidator(_loadable)]
"""A config field holding the path of a guideline file that must load."""


def save_guideline(guideline: Guideline, path: Path) -> Path:
    from optimizer.storage import atomic_write_text

    atomic_write_text(path, guideline.to_markdown())
    return path
