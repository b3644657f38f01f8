"""Provider price-and-cache models: what a request costs, given which of its tokens a prompt cache can serve.

Two cache rules cover the providers an agent is usually run against, plus no cache at all:

- `automatic`: the provider caches every prompt prefix by itself (OpenAI-style). A prefix shorter than
  `min_tokens` is never cached; past it, cached tokens come in steps of `granularity` tokens. Cached input
  is billed at a discount; nothing is charged for writing.
- `explicit`: the caller marks cache breakpoints (Anthropic-style). The prefix up to a breakpoint is written
  to the cache at a premium and read back at a discount while it is younger than `ttl_s` (each read renews
  it). A hit is looked for at each breakpoint and up to `lookback_blocks` message boundaries before it.
- `none`: every input token at the full price.

The presets are assumptions, written from the providers' published price pages as of the date in their
name; prices change, so edit them or give your own table in the config's `[cost]` section
(`[[cost.custom]]`, the same fields). Prices are in dollars per million tokens.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Price(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(..., min_length=1, description="How reports name this price model.")
    input_per_mtok: float = Field(..., ge=0, description="Uncached input tokens.")
    output_per_mtok: float = Field(..., ge=0, description="Output tokens.")


class NoCache(_Price):
    """Every input token at the full price."""

    cache: Literal["none"] = "none"


class AutomaticCache(_Price):
    """The provider caches prompt prefixes on its own (OpenAI-style); no write premium."""

    cache: Literal["automatic"] = "automatic"
    cached_input_per_mtok: float = Field(..., ge=0, description="Input tokens served from the cache.")
    min_tokens: int = Field(1024, ge=0, description="Shortest prefix the provider caches.")
    granularity: int = Field(128, ge=1, description="Past `min_tokens`, cached tokens come in steps of this.")
    ttl_s: float = Field(300.0, gt=0, description="A prefix unused this long is evicted.")


class ExplicitCache(_Price):
    """The caller marks breakpoints (Anthropic-style): writes cost a premium, reads are discounted."""

    cache: Literal["explicit"] = "explicit"
    cache_write_per_mtok: float = Field(..., ge=0, description="Input tokens written to the cache.")
    cache_read_per_mtok: float = Field(..., ge=0, description="Input tokens read from the cache.")
    min_tokens: int = Field(1024, ge=0, description="Shortest prefix a breakpoint caches.")
    ttl_s: float = Field(300.0, gt=0, description="A cached prefix unread this long expires.")
    lookback_blocks: int = Field(20, ge=0, description="Message boundaries before a breakpoint checked for a hit.")
    breakpoints: tuple[Literal["system", "last"], ...] = Field(
        ("system", "last"),
        description="Where the harness marks breakpoints: after the system prompt, and on the last message "
        "(the usual agent pattern: the whole conversation so far is cached for the next turn).",
    )


PriceModel = Annotated[NoCache | AutomaticCache | ExplicitCache, Field(discriminator="cache")]

PRESETS: dict[str, NoCache | AutomaticCache | ExplicitCache] = {
    # OpenAI gpt-4.1, published 2025-04: $2.00 in, $0.50 cached in, $8.00 out; prompts of 1024+ tokens
    # cached automatically in 128-token steps, evicted after 5-10 minutes idle.
    "openai-gpt-4.1-2025-04": AutomaticCache(
        name="openai-gpt-4.1-2025-04",
        input_per_mtok=2.00,
        cached_input_per_mtok=0.50,
        output_per_mtok=8.00,
        min_tokens=1024,
        granularity=128,
        ttl_s=300.0,
    ),
    # Anthropic Claude Sonnet 4, published 2025-05: $3.00 in, $15.00 out; 5-minute cache writes 1.25x the
    # input price, reads 0.1x; at most 4 breakpoints, 1024-token minimum, 20-block lookback.
    "anthropic-sonnet-4-2025-05": ExplicitCache(
        name="anthropic-sonnet-4-2025-05",
        input_per_mtok=3.00,
        output_per_mtok=15.00,
        cache_write_per_mtok=3.75,
        cache_read_per_mtok=0.30,
        min_tokens=1024,
        ttl_s=300.0,
        lookback_blocks=20,
    ),
    # The same Sonnet 4 prices with no cache: what the other two save.
    "uncached-sonnet-4-2025-05": NoCache(name="uncached-sonnet-4-2025-05", input_per_mtok=3.00, output_per_mtok=15.00),
}


class CostConfig(BaseModel):
    """`[cost]`: the price models every run's bill is projected under; the first is the headline one."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    presets: tuple[str, ...] = Field(
        ("openai-gpt-4.1-2025-04", "anthropic-sonnet-4-2025-05"),
        description=f"Built-in price models projected, by name ({', '.join(PRESETS)}).",
    )
    custom: tuple[PriceModel, ...] = Field((), description="Your own price tables, projected after the presets.")
    seconds_per_request: float | None = Field(
        None,
        gt=0,
        description="Time between an episode's requests, for cache expiry (None: the recorded times; a "
        "tier-0 episode runs in milliseconds, so nothing expires).",
    )

    @model_validator(mode="after")
    def _known(self) -> CostConfig:
        unknown = [p for p in self.presets if p not in PRESETS]
        if unknown:
            raise ValueError(f"unknown price preset {unknown[0]!r} (known: {', '.join(PRESETS)})")
        names = [m.name for m in self.models]
        if len(set(names)) != len(names):
            raise ValueError("price model names must be distinct")
        return self

    @property
    def models(self) -> tuple[NoCache | AutomaticCache | ExplicitCache, ...]:
        return (*(PRESETS[p] for p in self.presets), *self.custom)

    @property
    def primary(self) -> str | None:
        """The price model headline figures and `objective = "cost"` use."""
        return self.models[0].name if self.models else None
