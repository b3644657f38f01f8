"""The deterministic CO-step moves: each tightens one knob, cites it, and keeps the contract."""

from __future__ import annotations

from optimizer.context.guideline import SEED_GUIDELINE, RetentionPolicy, read_guideline
from optimizer.search.deterministic import tighten
from optimizer.search.validate import ToolOutputIndex, validate


def _with(**policy):
    seed = read_guideline(SEED_GUIDELINE)
    return seed.model_copy(update={"policy": RetentionPolicy.model_validate({**seed.policy.model_dump(), **policy})})


def test_tighten_offers_one_move_per_knob():
    current = _with(t_hist=2000, t_obs=1000, summary_max_tokens=250, observation_max_tokens=160, keep_last_k=2)
    moves = {p.guideline.name.rsplit("+", 1)[1]: p for p in tighten(current)}
    assert set(moves) == {"lower", "short", "k1"}
    short = moves["short"].guideline.policy
    assert (short.summary_max_tokens, short.observation_max_tokens) == (150, 96)
    assert (short.t_hist, short.t_obs, short.keep_last_k) == (2000, 1000, 2)  # nothing else moves
    assert moves["short"].rationale == "summary cap 250->150, observation cap 160->96"
    assert short.pinned == current.policy.pinned
    for proposal in moves.values():
        assert validate(proposal.guideline, current, ToolOutputIndex(), max_chars=10_000) is None


def test_caps_stop_at_their_floors():
    current = _with(summary_max_tokens=96, observation_max_tokens=64, keep_last_k=1, t_hist=256, t_obs=128)
    assert tighten(current) == []
    half = _with(summary_max_tokens=120, observation_max_tokens=64)
    (short,) = [p for p in tighten(half) if p.guideline.name.endswith("+short")]
    assert (short.guideline.policy.summary_max_tokens, short.guideline.policy.observation_max_tokens) == (96, 64)
