"""ACON's thresholds have one default (`optimizer.context.thresholds`): the baselines, the moves they
translate to and the seed guideline's front matter all agree with it."""

from __future__ import annotations

from optimizer.context.guideline import SEED_GUIDELINE, read_guideline
from optimizer.context.moves import Compress, SummarizeOld
from optimizer.context.strategies import LlmHistory, LlmObservation
from optimizer.context.thresholds import KEEP_LAST_RAW, OBSERVATION_MAX_TOKENS, SUMMARY_MAX_TOKENS, T_HIST, T_OBS


def test_history_baseline_and_summarize_move_share_their_defaults():
    baseline, move = LlmHistory(), SummarizeOld()
    assert (baseline.t_hist, baseline.keep_last, baseline.max_tokens) == (T_HIST, KEEP_LAST_RAW, SUMMARY_MAX_TOKENS)
    assert (move.over, move.keep_last, move.max_tokens) == (T_HIST, KEEP_LAST_RAW, SUMMARY_MAX_TOKENS)
    # The baseline is the default move, minus the recall index ACON does not keep.
    assert baseline.policy().history == (move.model_copy(update={"index": False}),)


def test_observation_baseline_and_compress_move_share_their_defaults():
    baseline, move = LlmObservation(), Compress()
    assert (baseline.t_obs, baseline.max_tokens) == (T_OBS, OBSERVATION_MAX_TOKENS)
    assert (move.over, move.max_tokens) == (T_OBS, OBSERVATION_MAX_TOKENS)
    assert baseline.policy().write == (move.model_copy(update={"recoverable": False}),)


def test_seed_front_matter_writes_the_same_thresholds():
    policy = read_guideline(SEED_GUIDELINE).policy
    compress = [m for m in policy.write if isinstance(m, Compress)]
    summarize = [m for m in policy.history if isinstance(m, SummarizeOld)]
    assert compress and summarize, "the seed compresses observations and summarizes history"
    assert {m.over for m in compress} == {T_OBS}
    assert {m.over for m in summarize} == {T_HIST}
