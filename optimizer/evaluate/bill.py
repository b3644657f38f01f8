"""An episode's bill, projected from the requests it sent, under a provider's price-and-cache model.

Every step records its request as message text hashes, so which part of a request a prompt cache could
serve follows from the prefix it shares with the requests before it; no server is needed, and a tier-0
episode gets a real cost. Per request: input at the full price, input served from the cache, input
written to it, and output (the reported completion, or the length of the action the agent took, which is
what a model would have had to write). Compressor calls are billed as one-off prompts (no cache) under
the same prices; a call answered from acon's own reply cache is billed too, as the provider would bill it
(the cache saves acon a call, not a deployment, so a cold and a warm cache project the same cost). A
recall is billed where it is paid: its result is input to every later request that shows it, and its
step is one more request; `recall_tokens` says how much of the input was text read back.

Tokens are acon's count of the messages sent (the system prompt included; native tool definitions sent
beside them are not) at both tiers, so tiers and strategies are billed alike; a tier-1 step's output is
the completion its server reported. Prefixes are compared at message boundaries: a message edited near
its end still shares its head with the old one on a real server, so the projection is slightly
pessimistic about such edits.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from optimizer.agent.episode import Episode, Scored, StepRecord
from optimizer.evaluate.pricing import AutomaticCache, CostConfig, ExplicitCache, NoCache
from optimizer.evaluate.records import EpisodeRecords, EpisodeSummary, ProjectedBills
from optimizer.tokens import MESSAGE_OVERHEAD_TOKENS, count_tokens

Price = NoCache | AutomaticCache | ExplicitCache


@dataclass(frozen=True)
class Bill:
    """One episode under one price model. Tokens include the system prompt, as a provider bills it."""

    model: str
    requests: int = 0
    input_tokens: int = 0  # billed at the full input price
    cached_tokens: int = 0  # read from the cache
    cache_write_tokens: int = 0  # written to the cache (explicit caches only)
    output_tokens: int = 0
    compressor_input_tokens: int = 0
    compressor_output_tokens: int = 0
    recall_tokens: int = 0  # of the input, text brought back by recall (counted once per recall)
    cost: float = 0.0
    cost_uncached: float = 0.0  # the same tokens with no cache at all

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens + self.cached_tokens + self.cache_write_tokens

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class _Request:
    keys: tuple[int, ...]  # keys[i]: the prefix of the first i + 1 messages
    cumulative: tuple[int, ...]  # cumulative[i]: tokens of the first i messages (cumulative[0] = 0)
    at_s: float
    has_system: bool

    @property
    def tokens(self) -> int:
        return self.cumulative[-1]

    def prefix_tokens(self, messages: int) -> int:
        return self.cumulative[messages]

    def key(self, messages: int) -> int:
        return self.keys[messages - 1]


def project_bills(episode: Episode, cost: CostConfig) -> dict[str, Bill]:
    """The episode's bill under every price model of `cost`, by model name."""
    requests = _requests(episode, cost.seconds_per_request)
    outputs = [_output_tokens(s) for s in episode.steps]
    return {m.name: _bill(episode, m, requests, outputs) for m in cost.models}


def project_bill(episode: Episode, price: Price, *, seconds_per_request: float | None = None) -> Bill:
    """The episode's bill under one price model (`seconds_per_request`: as in `CostConfig`)."""
    return _bill(episode, price, _requests(episode, seconds_per_request), [_output_tokens(s) for s in episode.steps])


def _bill(episode: Episode, price: Price, requests: Sequence[_Request], outputs: Sequence[int]) -> Bill:
    if isinstance(price, AutomaticCache):
        served = _automatic(requests, price)
    elif isinstance(price, ExplicitCache):
        served = _explicit(requests, price)
    else:
        served = [(0, 0)] * len(requests)
    cached = sum(r for r, _ in served)
    written = sum(w for _, w in served)
    prompt = sum(r.tokens for r in requests)
    compressor_in, compressor_out = _compressor_tokens(episode)
    output = sum(outputs)
    full = (prompt - cached - written + compressor_in) * price.input_per_mtok
    out = (output + compressor_out) * price.output_per_mtok
    return Bill(
        model=price.name,
        requests=len(requests),
        input_tokens=prompt - cached - written,
        cached_tokens=cached,
        cache_write_tokens=written,
        output_tokens=output,
        compressor_input_tokens=compressor_in,
        compressor_output_tokens=compressor_out,
        recall_tokens=_recall_tokens(episode),
        cost=(full + cached * _read_price(price) + written * _write_price(price) + out) / 1e6,
        cost_uncached=((prompt + compressor_in) * price.input_per_mtok + out) / 1e6,
    )


def _read_price(price: Price) -> float:
    if isinstance(price, AutomaticCache):
        return price.cached_input_per_mtok
    if isinstance(price, ExplicitCache):
        return price.cache_read_per_mtok
    return price.input_per_mtok


def _write_price(price: Price) -> float:
    return price.cache_write_per_mtok if isinstance(price, ExplicitCache) else price.input_per_mtok


def _automatic(requests: Iterable[_Request], price: AutomaticCache) -> list[tuple[int, int]]:
    """(read, written) per request: the longest live prefix any earlier request left, in cache steps."""
    last_used: dict[int, float] = {}
    out = []
    for request in requests:
        common = 0
        for i in range(1, len(request.keys) + 1):
            seen = last_used.get(request.key(i))
            if seen is None or request.at_s - seen > price.ttl_s:
                break
            common = i
        shared = request.prefix_tokens(common)
        read = 0
        if shared >= price.min_tokens and shared > 0:
            read = price.min_tokens + (shared - price.min_tokens) // price.granularity * price.granularity
        out.append((read, 0))
        for i in range(1, len(request.keys) + 1):
            last_used[request.key(i)] = request.at_s
    return out


def _explicit(requests: Iterable[_Request], price: ExplicitCache) -> list[tuple[int, int]]:
    """(read, written) per request: a hit at or a little before a breakpoint, then a write up to the last one."""
    expires: dict[int, float] = {}
    out = []
    for request in requests:
        marks = sorted(set(_breakpoints(request, price)))
        hit = 0
        for mark in marks:
            for p in range(mark, max(1, mark - price.lookback_blocks) - 1, -1):
                if p > hit and expires.get(request.key(p), -1.0) >= request.at_s:
                    hit = p
                    break
        read = request.prefix_tokens(hit)
        cacheable = [m for m in marks if m > hit and request.prefix_tokens(m) >= price.min_tokens]
        written = request.prefix_tokens(max(cacheable)) - read if cacheable else 0
        out.append((read, written))
        for m in [hit, *cacheable] if hit else cacheable:
            expires[request.key(m)] = request.at_s + price.ttl_s
    return out


def _breakpoints(request: _Request, price: ExplicitCache) -> list[int]:
    marks = []
    for where in price.breakpoints:
        if where == "system" and request.has_system:
            marks.append(1)
        elif where == "last" and request.keys:
            marks.append(len(request.keys))
    return marks


def _requests(episode: Episode, seconds_per_request: float | None) -> list[_Request]:
    counted: dict[str, int] = {}
    out = []
    for index, step in enumerate(episode.steps):
        keys, cumulative, key = [], [0], 0
        for message in step.request:
            text_key = message["text"]
            tokens = counted.get(text_key)
            if tokens is None:
                tokens = counted[text_key] = MESSAGE_OVERHEAD_TOKENS + count_tokens(episode.text(text_key))
            key = hash((key, message["role"], text_key))
            keys.append(key)
            cumulative.append(cumulative[-1] + tokens)
        at = index * seconds_per_request if seconds_per_request is not None else step.started_s
        has_system = bool(step.request) and step.request[0]["role"] == "system"
        out.append(_Request(tuple(keys), tuple(cumulative), at, has_system))
    return out


def _output_tokens(step: StepRecord) -> int:
    if step.usage:
        return int(step.usage.get("completion_tokens", 0))
    action = step.action
    if action.get("raw"):
        return count_tokens(action["raw"])
    # The reference agent writes nothing: bill the action a model would have written for it.
    calls = [{"tool": c["name"], "arguments": c.get("arguments", {})} for c in action.get("calls", ())]
    if calls:
        return sum(count_tokens(json.dumps(c, ensure_ascii=False)) for c in calls)
    return count_tokens(json.dumps({"answer": action.get("answer") or ""}, ensure_ascii=False))


def _compressor_tokens(episode: Episode) -> tuple[int, int]:
    calls = [r for r in episode.records if r.compressor_usage is not None]
    return (
        sum(r.compressor_usage.prompt_tokens for r in calls if r.compressor_usage),
        sum(r.compressor_usage.completion_tokens for r in calls if r.compressor_usage),
    )


def _recall_tokens(episode: Episode) -> int:
    return sum(c.result_tokens for c in episode.tool_calls if c.name == "recall" and not c.is_error)


def projected_bills(bills: Mapping[str, Bill], primary: str | None) -> ProjectedBills:
    """What an episode's summary keeps of its bills: the figures a run adds up, per price model, and the
    headline model's cost (`projected_cost`, what per-task scores and `objective = "cost"` read)."""
    return ProjectedBills(
        {name: bill.to_dict() for name, bill in bills.items()}, bills[primary].cost if primary is not None else None
    )


def with_bills(episodes: EpisodeRecords, cost: CostConfig) -> EpisodeRecords:
    """The run's records with each episode's projected bills in its summary.

    Projected after the run, not inside it: prices are not part of what an episode did, so a changed
    `[cost]` section re-bills stored episodes instead of orphaning them. Reads each record once, one at a time.
    """
    if not cost.models:
        return episodes
    bills = {}
    for episode in episodes:
        bills[episode.task_id] = projected_bills(project_bills(episode, cost), cost.primary)
    return episodes.with_projected(bills)


def summarize_bills(episodes: Sequence[Scored], primary: str | None) -> dict[str, Any]:
    """Run-level projected figures: per price model, totals and cost per success; cache breaks per episode.

    Only a run's summaries carry bills (`with_bills`): over bare episodes the projected figures are absent."""
    scored = [e for e in episodes if e.outcome != "infra_error"]
    successes = sum(1 for e in scored if e.success)
    out: dict[str, Any] = {
        "cache_breaks_per_episode": sum(e.metrics.cache_breaks for e in scored) / len(scored) if scored else 0.0
    }
    billed = [e.projected for e in scored if isinstance(e, EpisodeSummary) and e.projected]
    if not billed or len(billed) != len(scored):
        return out
    projected: dict[str, dict[str, Any]] = {}
    for name in billed[0]:
        totals = {k: sum(b[name][k] for b in billed) for k in _SUMMED}
        totals["cost_per_success"] = totals["cost"] / successes if successes else None
        totals["cost_per_success_uncached"] = totals["cost_uncached"] / successes if successes else None
        projected[name] = totals
    out["projected"] = projected
    out["cost_model"] = primary
    return out


_SUMMED = (
    "requests",
    "input_tokens",
    "cached_tokens",
    "cache_write_tokens",
    "output_tokens",
    "compressor_input_tokens",
    "compressor_output_tokens",
    "recall_tokens",
    "cost",
    "cost_uncached",
)
