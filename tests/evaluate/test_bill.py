"""Projected bills: the cache rules of each price model, on hand-built requests and on tier-0 runs."""

from __future__ import annotations

import re

import pytest

from optimizer.agent.episode import Episode, StepRecord
from optimizer.config import ExperimentConfig
from optimizer.context.strategies import parse_strategy
from optimizer.errors import ConfigError
from optimizer.evaluate.bill import project_bill
from optimizer.evaluate.pricing import PRESETS, AutomaticCache, CostConfig, ExplicitCache, NoCache
from optimizer.evaluate.strategy_runs import run_strategy, select_tasks
from optimizer.tokens import MESSAGE_OVERHEAD_TOKENS, count_tokens

OPENAI = AutomaticCache(
    name="auto", input_per_mtok=2.0, cached_input_per_mtok=0.5, output_per_mtok=8.0, min_tokens=1024, granularity=128
)
ANTHROPIC = ExplicitCache(
    name="explicit",
    input_per_mtok=3.0,
    output_per_mtok=15.0,
    cache_write_per_mtok=3.75,
    cache_read_per_mtok=0.3,
    min_tokens=1024,
    ttl_s=300.0,
)


def _text(tokens: int, tag: str) -> str:
    # " x" is one token each in cl100k; the tag keeps texts of equal length distinct.
    text = tag + " x" * tokens
    while count_tokens(text) > tokens:
        text = text[:-2]
    return text


def episode_of(*requests: list[str], system_tokens: int = 300) -> Episode:
    """An episode whose steps sent these message texts (after one shared system prompt), finishing each."""
    episode = Episode("t", "s", "none", "v", "reference", "success")
    system = episode.store(_text(system_tokens, "system"))
    for step, texts in enumerate(requests):
        request = [{"role": "system", "text": system}]
        request += [{"role": "user", "text": episode.store(t)} for t in texts]
        episode.steps.append(
            StepRecord(step, 0, [], [], request, 0, {"calls": [], "answer": "ok"}, started_s=float(step))
        )
    return episode


def tokens_of(episode: Episode, step: int) -> int:
    return sum(MESSAGE_OVERHEAD_TOKENS + count_tokens(episode.text(m["text"])) for m in episode.steps[step].request)


A, B, C, D = (_text(500, tag) for tag in "abcd")


def test_automatic_cache_reads_the_shared_prefix_in_granularity_steps_past_the_minimum():
    episode = episode_of([A], [A, B], [A, B, C])
    bill = project_bill(episode, OPENAI)
    shared_1 = tokens_of(episode, 0)  # the whole first request is the second's prefix
    shared_2 = tokens_of(episode, 1)
    expected = 0
    for shared in (shared_1, shared_2):
        if shared >= 1024:
            expected += 1024 + (shared - 1024) // 128 * 128
    assert shared_1 < 1024 <= shared_2  # the first prefix is too short to be cached at all
    assert bill.cached_tokens == expected and bill.cache_write_tokens == 0
    total = sum(tokens_of(episode, i) for i in range(3))
    assert bill.input_tokens + bill.cached_tokens == total
    output = bill.output_tokens
    assert bill.cost == pytest.approx(((total - expected) * 2.0 + expected * 0.5 + output * 8.0) / 1e6)
    assert bill.cost_uncached == pytest.approx((total * 2.0 + output * 8.0) / 1e6)


def test_explicit_cache_writes_at_a_premium_then_reads_at_a_discount():
    episode = episode_of([A, B], [A, B, C])
    bill = project_bill(episode, ANTHROPIC)
    first, second = tokens_of(episode, 0), tokens_of(episode, 1)
    # Request 1 writes its whole prefix (>= 1024) at the last breakpoint; request 2 reads it and writes the rest.
    assert bill.cache_write_tokens == first + (second - first)
    assert bill.cached_tokens == first
    assert bill.input_tokens == 0
    assert bill.cost == pytest.approx((second * 3.75 + first * 0.3 + bill.output_tokens * 15.0) / 1e6)


def test_an_edit_early_in_the_history_breaks_the_cache_and_costs_more():
    appended = episode_of([A, B, C], [A, B, C, D])
    rewritten = episode_of([A, B, C], [A, _text(20, "cleared"), C, D])  # B cleared: a shorter request
    for price in (OPENAI, ANTHROPIC):
        kept, broken = project_bill(appended, price), project_bill(rewritten, price)
        assert broken.prompt_tokens < kept.prompt_tokens  # fewer tokens sent...
        assert broken.cached_tokens < kept.cached_tokens
        assert broken.cost > kept.cost  # ...and yet a larger bill: the prefix was rebuilt


def test_an_explicit_cache_entry_expires_after_its_ttl():
    episode = episode_of([A, B, C], [A, B, C, D])
    fresh = project_bill(episode, ANTHROPIC, seconds_per_request=10.0)
    stale = project_bill(episode, ANTHROPIC, seconds_per_request=301.0)
    assert fresh.cached_tokens > 0 and stale.cached_tokens == 0
    assert stale.cache_write_tokens == tokens_of(episode, 0) + tokens_of(episode, 1)


def test_a_hit_further_back_than_the_lookback_is_missed():
    history = [_text(60, f"m{i}") for i in range(30)]
    episode = episode_of(history, [*history, *(_text(60, f"n{i}") for i in range(25))])
    near = project_bill(episode, ANTHROPIC)
    far = project_bill(episode, ANTHROPIC.model_copy(update={"lookback_blocks": 20}))
    wide = project_bill(episode, ANTHROPIC.model_copy(update={"lookback_blocks": 40}))
    assert near.cached_tokens == far.cached_tokens == 0  # 25 new messages: the old breakpoint is out of reach
    assert wide.cached_tokens == tokens_of(episode, 0)


def test_no_cache_bills_every_input_token_at_full_price():
    episode = episode_of([A, B], [A, B, C])
    bill = project_bill(episode, NoCache(name="plain", input_per_mtok=1.0, output_per_mtok=1.0))
    assert bill.cached_tokens == bill.cache_write_tokens == 0 and bill.cost == bill.cost_uncached


def test_cost_config_validates_presets_and_names():
    assert [m.name for m in CostConfig().models] == list(CostConfig().presets)
    with pytest.raises(ValueError, match="unknown price preset 'nope'"):
        CostConfig(presets=("nope",))
    with pytest.raises(ValueError, match="distinct"):
        CostConfig(presets=(), custom=(OPENAI, OPENAI))
    for name, preset in PRESETS.items():
        assert preset.name == name and re.search(r"-\d{4}-\d{2}$", name)  # named with its figures' date


def smoke_config(tmp_path, cost: dict | None = None) -> ExperimentConfig:
    return ExperimentConfig.model_validate(
        {
            "name": "bill",
            "out": str(tmp_path / "job"),
            "suite": {"type": "smoke"},
            "run": {"agent": "reference", "split": "all"},
            "tracking": {"enabled": False},
            **({"cost": cost} if cost is not None else {}),
        }
    )


def test_a_tier_0_run_has_a_real_cost_per_success_under_every_price_model(tmp_path):
    custom = {"name": "mine", "cache": "none", "input_per_mtok": 1.0, "output_per_mtok": 2.0}
    config = smoke_config(tmp_path, {"custom": [custom]})
    tasks = select_tasks(config, "all", None)
    result = run_strategy(config, tasks, parse_strategy("none"), agent="reference", endpoints=None, split="all")
    summary = result.summary
    assert set(summary["projected"]) == {*CostConfig().presets, "mine"}
    assert summary["cost_source"] == f"projected ({CostConfig().presets[0]})"
    assert summary["cost_per_success"] == summary["projected"][CostConfig().presets[0]]["cost_per_success"] > 0
    mine = summary["projected"]["mine"]
    assert mine["cost"] == pytest.approx((mine["input_tokens"] * 1.0 + mine["output_tokens"] * 2.0) / 1e6)
    assert "cache_breaks_per_episode" in summary
    per_task = [e.projected_cost for e in result.episodes.summaries]
    assert sum(per_task) == pytest.approx(summary["projected"][CostConfig().presets[0]]["cost"])


def test_an_unknown_preset_in_a_config_is_one_line(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text('name = "x"\n[suite]\ntype = "smoke"\n[cost]\npresets = ["nope"]\n')
    from optimizer.config import load_experiment

    with pytest.raises(ConfigError, match="unknown price preset 'nope'") as info:
        load_experiment(path)
    assert "\n" not in str(info.value)


def test_a_custom_price_table_missing_a_field_is_named_in_one_line(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text(
        'name = "x"\n[suite]\ntype = "smoke"\n[[cost.custom]]\nname = "mine"\ncache = "explicit"\n'
        "input_per_mtok = 3.0\noutput_per_mtok = 15.0\ncache_write_per_mtok = 3.75\n"
    )
    from optimizer.config import load_experiment

    with pytest.raises(ConfigError, match=r"missing key 'cost.custom.0.cache_read_per_mtok'"):
        load_experiment(path)


@pytest.mark.parametrize("price", [OPENAI, ANTHROPIC, NoCache(name="flat", input_per_mtok=1.0, output_per_mtok=4.0)])
def test_a_compressor_reply_from_acons_cache_is_billed_as_the_provider_would(price):
    # acon's reply cache saves acon a call; a user's deployment makes every call. A projection that left cached
    # calls out would price the same job lower on a warm cache than a cold one, and rank guidelines on that.
    from optimizer.context.record import CompressionRecord
    from optimizer.llm.usage import Usage

    def with_compression(cached: bool) -> Episode:
        episode = episode_of([A], [A, B])
        usage = Usage(1200, 150, 0, "reported")
        episode.records.append(
            CompressionRecord(
                "guideline", "write", 1, "compress", (2,), 900, 150, compressor_usage=usage, compressor_cached=cached
            )
        )
        return episode

    cold, warm = (project_bill(with_compression(cached), price) for cached in (False, True))
    assert warm == cold
    assert (cold.compressor_input_tokens, cold.compressor_output_tokens) == (1200, 150)
