"""What a run records as params and tags: models, endpoints (never keys), thresholds, budgets, seeds."""

from __future__ import annotations

import json
from collections.abc import Mapping
from urllib.parse import urlsplit, urlunsplit

from optimizer.agent.kinds import AGENTS
from optimizer.config import ExperimentConfig
from optimizer.jsontypes import JSON, JSONObject
from optimizer.llm.endpoint import EndpointConfig

MAX_PARAM_CHARS = 6000  # MLflow's limit on a param value


def tier_of(agent: str) -> str:
    """The evaluation tier an agent's episodes are reported under (`AgentKind.tier`)."""
    return str(AGENTS.get(agent).tier)


def flatten(data: Mapping[str, JSON], prefix: str = "") -> dict[str, str]:
    """`{"a": {"b": 1}}` → `{"a.b": "1"}`; lists become JSON, values are cut to MLflow's limit."""
    out: dict[str, str] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{name}."))
        elif value is not None:
            text = value if isinstance(value, str) else json.dumps(value, default=str)
            out[name] = text[:MAX_PARAM_CHARS]
    return out


def public_url(url: str) -> str:
    """The URL without any `user:password@` part."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def endpoint_params(endpoint: EndpointConfig) -> JSONObject:
    """An endpoint's identity and sampling settings; `describe()` guarantees no key is included."""
    described = endpoint.describe()
    return {
        "model": described["model"],
        "base_url": public_url(described["base_url"]),
        "temperature": endpoint.temperature,
        "max_tokens": endpoint.max_tokens,
        **endpoint.sampling(),
    }


def experiment_params(config: ExperimentConfig, *, optimize: bool = False) -> dict[str, str]:
    """The params of a job run: seed, suite, run settings, strategy, models, optimizer budgets, bars.

    An `acon optimize` job runs neither the config's `[run]` split nor its `strategy` (it learns a guideline
    from the seed, on train, and reports on test): those params would contradict its tags, so they are left out.
    """
    endpoints = config.endpoints
    return flatten(
        {
            "experiment": config.name,
            "seed": config.seed,
            "suite": config.suite.model_dump(mode="json"),
            **(
                {}
                if optimize
                else {"run": config.run.model_dump(mode="json"), "strategy": config.strategy.model_dump(mode="json")}
            ),
            "guideline": config.guideline,
            "endpoints": {
                "agent": endpoint_params(endpoints.agent),
                "compressor": endpoint_params(endpoints.compressor),
                "optimizer": endpoint_params(endpoints.optimizer),
            },
            "optimize": config.optimize.model_dump(mode="json"),
            "acceptance": config.acceptance.model_dump(mode="json"),
        }
    )


def experiment_tags(
    config: ExperimentConfig, *, strategy: str | None = None, split: str | None = None, agent: str | None = None
) -> dict[str, str]:
    """Tags a reviewer filters on: suite, split, agent, strategy, tier (0 reference, 1 llm agent)."""
    agent = agent or config.run.agent
    return {
        "suite": config.suite.type,
        "split": split or config.run.split,
        "agent": agent,
        "strategy": strategy or config.strategy.label(),
        "tier": tier_of(agent),
    }
