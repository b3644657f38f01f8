"""Token usage of one model call, and prices to turn usage into cost."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

UsageSource = Literal["reported", "counted"]


@dataclass(frozen=True)
class Usage:
    """Tokens of one call. `source` says whether the server reported them or acon counted them."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    source: UsageSource = "reported"

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cached_tokens + other.cached_tokens,
            "counted" if "counted" in (self.source, other.source) else "reported",
        )

    def to_dict(self) -> dict[str, int | str]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_tokens": self.cached_tokens,
            "source": self.source,
        }

    @classmethod
    def from_dict(cls, data: dict) -> Usage:
        return cls(
            int(data.get("prompt_tokens", 0)),
            int(data.get("completion_tokens", 0)),
            int(data.get("cached_tokens", 0)),
            data.get("source", "reported"),
        )


def total_usage(usages: Iterable[Usage]) -> Usage:
    out = Usage()
    for usage in usages:
        out = out + usage
    return out


class Pricing(BaseModel):
    """Prices in currency units per million tokens. Cached prompt tokens are priced on their own."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_per_mtok: float = Field(0.0, ge=0, description="Uncached prompt tokens.")
    cached_input_per_mtok: float | None = Field(
        None, ge=0, description="Cached prompt tokens; defaults to the uncached price (no cache discount)."
    )
    output_per_mtok: float = Field(0.0, ge=0, description="Completion tokens.")

    def cost(self, usage: Usage, *, cache_aware: bool = True) -> float:
        cached = usage.cached_tokens if cache_aware else 0
        cached_price = self.input_per_mtok if self.cached_input_per_mtok is None else self.cached_input_per_mtok
        return (
            (usage.prompt_tokens - cached) * self.input_per_mtok
            + cached * cached_price
            + usage.completion_tokens * self.output_per_mtok
        ) / 1e6
