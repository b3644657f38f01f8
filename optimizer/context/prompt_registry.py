"""Guidelines in MLflow's prompt registry: two prompts per guideline version, the policy in tags.

A guideline version `v` is registered as `<prefix>-history` (the history compressor instruction) and
`<prefix>-observation` (the observation compressor instruction). Each prompt version carries the
guideline's hash, name, description, retention policy (JSON) and provenance, plus a pointer to its twin,
so either prompt rebuilds the whole guideline. Registration is idempotent per hash. The explicit client
reads aliases straight from the store, so the 60-second alias cache of `load_prompt` never applies.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from mlflow import MlflowClient
from mlflow.entities.model_registry import PromptVersion
from mlflow.exceptions import MlflowException

from optimizer.context.guideline import Guideline
from optimizer.context.policy import RetentionPolicy
from optimizer.errors import ConfigError

HISTORY, OBSERVATION = "history", "observation"
TAG_VERSION = "acon.version"
TAG_COMPONENT = "acon.component"
TAG_NAME = "acon.name"
TAG_DESCRIPTION = "acon.description"
TAG_POLICY = "acon.policy"
TAG_PROVENANCE = "acon.provenance"
TAG_TWIN = "acon.twin"  # "<name>/<version>" of the other component's prompt
MAX_TAG_CHARS = 8000
BEST = "best"
# Tags that rebuild the guideline itself; every other `acon.` tag of a version describes its candidate.
_GUIDELINE_TAGS = {TAG_VERSION, TAG_COMPONENT, TAG_NAME, TAG_DESCRIPTION, TAG_POLICY, TAG_PROVENANCE, TAG_TWIN}


@dataclass(frozen=True)
class RegisteredGuideline:
    """Where one guideline version lives in the registry (`prompts:/<name>/<version>` URIs)."""

    version: str
    history: str
    observation: str


def prompt_prefix(experiment: str) -> str:
    """`acon-<experiment>`, with characters the registry refuses replaced by '-'."""
    return "acon-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", experiment).strip("-")


class GuidelineRegistry:
    """Register guideline versions under one prefix and move aliases between them."""

    def __init__(self, client: MlflowClient, prefix: str) -> None:
        self.client = client
        self.names = {HISTORY: f"{prefix}-{HISTORY}", OBSERVATION: f"{prefix}-{OBSERVATION}"}
        self._known: dict[str, dict[str, int]] = {}  # prompt name -> guideline hash -> version

    def find(self, version: str) -> RegisteredGuideline | None:
        history, observation = (self._versions(self.names[part]).get(version) for part in (HISTORY, OBSERVATION))
        if history is None or observation is None:
            return None
        return self._registered(version, history, observation)

    def register(
        self,
        guideline: Guideline,
        *,
        alias: str | None = None,
        tags: dict[str, str] | None = None,
        message: str | None = None,
    ) -> RegisteredGuideline:
        """Register `guideline` unless its hash already is (a crash between the two halves is repaired).

        `tags` (candidate, origin, scores) and `message` go on a new version only: a version is registered once.
        """
        version = guideline.version
        numbers = {}
        for part, name in self.names.items():
            number = self._versions(name).get(version)
            if number is None:
                text = guideline.history if part == HISTORY else guideline.observation
                created = self.client.register_prompt(
                    name,
                    text,
                    commit_message=message or f"{guideline.name} {version}",
                    tags={**_tags(guideline, part), **(tags or {})},
                )
                number = int(created.version)
                self._versions(name)[version] = number
            numbers[part] = number
        for part, other in ((HISTORY, OBSERVATION), (OBSERVATION, HISTORY)):
            twin = f"{self.names[other]}/{numbers[other]}"
            self.client.set_prompt_version_tag(self.names[part], numbers[part], TAG_TWIN, twin)
        registered = self._registered(version, numbers[HISTORY], numbers[OBSERVATION])
        if alias is not None:
            self._alias(numbers, alias)
        return registered

    def tag_version(self, guideline: Guideline, tags: dict[str, str]) -> None:
        """Tags on both prompt versions of a registered guideline (its status once the job decided)."""
        found = self.find(guideline.version)
        if found is None:
            raise KeyError(f"guideline {guideline.version} is not registered")
        for part, uri in ((HISTORY, found.history), (OBSERVATION, found.observation)):
            number = uri.rsplit("/", 1)[1]
            for key, value in tags.items():
                self.client.set_prompt_version_tag(self.names[part], number, key, value[:MAX_TAG_CHARS])

    def tag_prompts(self, tags: dict[str, str]) -> None:
        """Prompt-level tags on both prompts."""
        for name in self.names.values():
            for key, value in tags.items():
                self.client.set_prompt_tag(name, key, value[:MAX_TAG_CHARS])

    def set_alias(self, guideline: Guideline, alias: str = BEST) -> RegisteredGuideline:
        """Point `alias` of both prompts at this guideline version (registering it if needed)."""
        return self.register(guideline, alias=alias)

    def _alias(self, numbers: dict[str, int], alias: str) -> None:
        for part, name in self.names.items():
            self.client.set_prompt_alias(name, alias, numbers[part])

    def _versions(self, name: str) -> dict[str, int]:
        if name not in self._known:
            known: dict[str, int] = {}
            if self.client.get_prompt(name) is not None:
                token = None
                while True:
                    page = self.client.search_prompt_versions(name, max_results=1000, page_token=token)
                    for prompt in page:
                        known.setdefault(prompt.tags.get(TAG_VERSION, ""), int(prompt.version))
                    token = page.token
                    if not token:
                        break
            known.pop("", None)
            self._known[name] = known
        return self._known[name]

    def _registered(self, version: str, history: int, observation: int) -> RegisteredGuideline:
        history_uri = f"prompts:/{self.names[HISTORY]}/{history}"
        return RegisteredGuideline(version, history_uri, f"prompts:/{self.names[OBSERVATION]}/{observation}")


def _tags(guideline: Guideline, part: str) -> dict[str, str]:
    tags = {
        TAG_VERSION: guideline.version,
        TAG_COMPONENT: part,
        TAG_NAME: guideline.name,
        TAG_DESCRIPTION: guideline.description[:MAX_TAG_CHARS],
        TAG_POLICY: guideline.policy.model_dump_json(),
    }
    provenance = json.dumps(guideline.provenance, sort_keys=True, default=str)
    if guideline.provenance and len(provenance) <= MAX_TAG_CHARS:
        tags[TAG_PROVENANCE] = provenance
    return tags


def parse_ref(ref: str) -> tuple[str, str | None, str | None]:
    """`NAME@ALIAS`, `NAME/VERSION` or either with `prompts:/` in front → (name, version, alias)."""
    body = ref.removeprefix("prompts:/").strip()
    if "@" in body:
        name, alias = body.rsplit("@", 1)
        if name and alias:
            return name, None, alias
    elif "/" in body:
        name, version = body.rsplit("/", 1)
        if name and version.isdigit():
            return name, version, None
    raise ConfigError(f"registry reference {ref!r}: expected NAME@ALIAS or NAME/VERSION")


def load_from_registry(ref: str, tracking_uri: str | None = None, *, provenance: bool = False) -> Guideline:
    """Rebuild a guideline from either of its prompts; NAME may also be the prefix (`acon-exp@best`).

    `provenance=True` (what an export wants) adds where it was read and what the job recorded of the version.
    """
    if tracking_uri and tracking_uri.startswith("sqlite:///"):
        database = Path(tracking_uri.removeprefix("sqlite:///"))
        if not database.exists():  # MLflow would create an empty store there
            raise ConfigError(f"no MLflow store at {database}")
    client = MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri)
    name, version, alias = parse_ref(ref)
    first = _get(client, _prompt_named(client, name), version, alias, ref)
    twin_ref = first.tags.get(TAG_TWIN)
    if first.tags.get(TAG_VERSION) is None or twin_ref is None:
        raise ConfigError(f"{ref}: prompt {first.name}/{first.version} has no guideline tags (not from acon)")
    twin_name, twin_version, _ = parse_ref(twin_ref)
    twin = _get(client, twin_name, twin_version, None, ref)
    parts = {first.tags.get(TAG_COMPONENT): first, twin.tags.get(TAG_COMPONENT): twin}
    if set(parts) != {HISTORY, OBSERVATION}:
        raise ConfigError(f"{ref}: the two prompts are not one history and one observation instruction")
    tags = parts[HISTORY].tags
    history, observation = parts[HISTORY].template, parts[OBSERVATION].template
    if not isinstance(history, str) or not isinstance(observation, str):
        raise ConfigError(f"{ref}: a chat prompt, not the text instructions acon registers")
    guideline = Guideline(
        name=tags.get(TAG_NAME, "guideline"),
        description=tags.get(TAG_DESCRIPTION, ""),
        policy=RetentionPolicy.model_validate_json(tags[TAG_POLICY]),
        history=history,
        observation=observation,
        provenance=json.loads(tags.get(TAG_PROVENANCE, "{}")),
    )
    if guideline.version != tags[TAG_VERSION]:
        raise ConfigError(
            f"{ref}: rebuilt guideline hashes to {guideline.version}, the registry says {tags[TAG_VERSION]}"
        )
    if not provenance:
        return guideline
    return with_registry_provenance(guideline, ref, parts[HISTORY], parts[OBSERVATION], tracking_uri)


def _prompt_named(client: MlflowClient, name: str) -> str:
    """The prompt NAME stands for: itself, or the history prompt of a prefix (`acon-exp`) or of an experiment
    (`exp`, the name a user of `acon optimize` knows)."""
    for prompt in (name, f"{name}-{HISTORY}", f"{prompt_prefix(name)}-{HISTORY}"):
        if client.get_prompt(prompt) is not None:
            return prompt
    suffix = f"-{HISTORY}"
    held = sorted(p.name.removesuffix(suffix) for p in client.search_prompts() if p.name.endswith(suffix))
    holds = f"it holds {', '.join(held)}" if held else "it holds none"
    raise ConfigError(f"no guideline registered as {name!r} in this store ({holds})")


def with_registry_provenance(
    guideline: Guideline, ref: str, history: PromptVersion, observation: PromptVersion, tracking_uri: str | None
) -> Guideline:
    """The guideline as exported from the registry: where it was read, what the job said of that version.

    Candidates inherit the seed's description, so a description of its own is written from the version's tags.
    """
    tags = history.tags
    candidate = {
        k.removeprefix("acon."): v for k, v in tags.items() if k.startswith("acon.") and k not in _GUIDELINE_TAGS
    }
    provenance = {
        **guideline.provenance,
        "registry": {
            "ref": ref,
            "tracking_uri": tracking_uri,
            "history": f"{history.name}/{history.version}",
            "observation": f"{observation.name}/{observation.version}",
            **candidate,
        },
    }
    if "candidate" in candidate:
        description = (
            f"Registered by acon: {candidate['candidate']} (round {candidate.get('round', '?')}, "
            f"{candidate.get('status', 'screened')}), read from {history.name}/{history.version}."
        )
    else:
        description = guideline.description or f"Read from the prompt registry: {history.name}/{history.version}."
    return guideline.model_copy(update={"provenance": provenance, "description": description})


def _get(client: MlflowClient, name: str, version: str | None, alias: str | None, ref: str) -> PromptVersion:
    prompt: PromptVersion | None
    try:
        if alias is not None:
            prompt = client.get_prompt_version_by_alias(name, alias)
        else:
            prompt = client.get_prompt_version(name, version)
    except MlflowException as exc:
        raise ConfigError(f"{ref}: {exc.message}") from None
    if prompt is None:
        raise ConfigError(f"{ref}: prompt {name}/{version} not found")
    return prompt
