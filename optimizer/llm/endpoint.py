"""Where a model lives: the embedded local server or any OpenAI-compatible base URL."""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from optimizer.errors import ConfigError
from optimizer.llm.usage import Pricing

LOCAL = "local"


class EndpointConfig(BaseModel):
    """An OpenAI-compatible chat endpoint. `base_url = "local"` means the embedded llama.cpp server."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = Field(LOCAL, description='"local" for the embedded server, else e.g. http://host:8000/v1.')
    model: str = Field(
        "qwen2.5-coder-1.5b",
        description="Model name sent to the server; for `local`, a model profile (`acon models status`).",
    )
    api_key_env: str | None = Field(
        None, description="Name of the environment variable holding the API key; never the key itself."
    )
    temperature: float = Field(0.0, ge=0, le=2)
    seed: int | None = Field(
        None, description="Sampling seed sent with every request: repeats at temperature > 0 that differ only by it."
    )
    frequency_penalty: float = Field(
        0.0,
        ge=-2,
        le=2,
        description="OpenAI's frequency penalty, sent only when not 0 (llama.cpp's server honours it): against a "
        "small model repeating itself at temperature 0; on the local 0.5B summarizer 0.5 cut short loops, not "
        "a paragraph repeated under each heading.",
    )
    max_tokens: int = Field(384, gt=0, description="Completion cap per call.")
    timeout_s: float = Field(300.0, gt=0, description="Per-request timeout; a timeout is retried.")
    max_retries: int = Field(3, ge=0, le=10, description="Retries on 429, 5xx, timeouts and broken replies.")
    backoff_s: float = Field(1.0, ge=0, description="First retry delay; doubles each retry, with jitter.")
    structured_output: Literal["json_schema", "json_object", "none"] = Field(
        "json_schema", description="Which `response_format` the server honours, for JSON-mode agents."
    )
    native_tools: bool = Field(
        False, description="Whether the model emits native `tool_calls`; the local models do not."
    )
    context_tokens: int = Field(
        16384, ge=2048, description="Prompt + completion limit of the model; longer compressor inputs are chunked."
    )
    concurrency: int = Field(1, ge=1, le=64, description="Requests in flight at once against this endpoint.")
    pricing: Pricing = Field(default_factory=Pricing)

    @field_validator("base_url")
    @classmethod
    def _url_or_local(cls, value: str) -> str:
        if value != LOCAL and not value.startswith(("http://", "https://")):
            raise ValueError('must be "local" or an http(s) URL')
        return value.rstrip("/")

    @property
    def is_local(self) -> bool:
        return self.base_url == LOCAL

    def api_key(self) -> str:
        if self.api_key_env is None:
            # OpenAI-compatible local servers accept any key; the SDK refuses to send none.
            return "acon-local"
        key = os.environ.get(self.api_key_env)
        if not key:
            raise ConfigError(f"environment variable {self.api_key_env} (api_key_env) is not set")
        return key

    def sampling(self) -> dict[str, float | int]:
        """Sampling settings a request carries beyond temperature, each only when set: what a reply cache keys on,
        so that two settings never share a cached reply."""
        out: dict[str, float | int] = {}
        if self.seed is not None:
            out["seed"] = self.seed
        if self.frequency_penalty != 0.0:
            out["frequency_penalty"] = self.frequency_penalty
        return out

    def identity(self) -> dict[str, str]:
        """`describe()` plus the settings that change what the endpoint replies or is sent (part of a run's
        key), each only when it differs from its default, so runs recorded before it was keyed keep their key."""
        identity = self.describe()
        for name in ("max_tokens", "structured_output", "native_tools", "context_tokens"):
            value = getattr(self, name)
            if value != type(self).model_fields[name].default:
                identity[name] = str(value)
        return identity

    def describe(self) -> dict[str, str]:
        """Loggable identity of the endpoint: never includes the key."""
        identity = {"base_url": self.base_url, "model": self.model}
        # Only when set, so that runs recorded before sampling settings existed keep their identity.
        if self.seed is not None or self.temperature != 0.0:
            identity |= {"temperature": str(self.temperature), "seed": str(self.seed)}
        if self.frequency_penalty != 0.0:
            identity["frequency_penalty"] = str(self.frequency_penalty)
        return identity
