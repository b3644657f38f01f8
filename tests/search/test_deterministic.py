"""The deterministic proposers: patches read off the diffs, and CO-step moves that each tighten one knob."""

from __future__ import annotations

from optimizer.context.guideline import SEED_GUIDELINE, RetentionPolicy, read_guideline
from optimizer.context.moves import Clear, Compress, Offload, SummarizeOld
from optimizer.mining.provenance import MissingFact, PairDiff
from optimizer.search.deterministic import patch_from_diffs, tighten
from optimizer.search.validate import ToolOutputIndex, validate
from optimizer.world.retention import RetentionClass

SEED = read_guideline(SEED_GUIDELINE)


def _with(**policy):
    return SEED.model_copy(update={"policy": RetentionPolicy.model_validate({**SEED.policy.model_dump(), **policy})})


def test_tighten_offers_one_variant_per_knob():
    current = _with(write=[{"move": "compress", "classes": ["static"], "over": 1000, "max_tokens": 160}],
                    history=[{"move": "summarize", "over": 2000, "keep_last": 2, "max_tokens": 250}])
    variants = {p.guideline.name.rsplit("+", 1)[1]: p for p in tighten(current)}
    assert set(variants) == {"lower", "short", "fewer"}
    short = variants["short"].guideline.policy
    assert (short.write[0].max_tokens, short.history[0].max_tokens) == (96, 150)
    assert (short.write[0].over, short.history[0].over, short.history[0].keep_last) == (1000, 2000, 2)
    lower = variants["lower"].guideline.policy
    assert (lower.write[0].over, lower.history[0].over) == (600, 1200)
    assert variants["fewer"].guideline.policy.history[0].keep_last == 1
    for proposal in variants.values():
        assert proposal.guideline.policy.pinned == current.policy.pinned
        assert validate(proposal.guideline, current, ToolOutputIndex(), max_chars=10_000) is None


def test_caps_stop_at_their_floors():
    floor = _with(write=[{"move": "compress", "over": 128, "max_tokens": 64}],
                  history=[{"move": "summarize", "over": 128, "keep_last": 1, "max_tokens": 96}])
    assert tighten(floor) == []


def fact(retention: str, checkpoint: int, action: str) -> MissingFact:
    return MissingFact("ID-1", "value", "guess", retention, checkpoint, 2, 4, {"action": action})


def diff(*facts: MissingFact) -> PairDiff:
    return PairDiff("t", "guideline", 2, list(facts), [], [], [])


def test_a_write_time_loss_takes_the_class_out_of_the_move_or_offloads_it():
    keep, offload = patch_from_diffs(SEED, [diff(fact("static", 2, "compress"))])
    assert keep.guideline.policy.write == ()  # the seed compresses only static results
    assert offload.guideline.policy.write == (Offload(classes=(RetentionClass.STATIC,), over=1024),)
    assert keep.guideline.policy.history == SEED.policy.history
    assert "keep fresh static results raw" in keep.rationale


def test_a_summary_loss_clears_the_class_instead():
    (patch,) = patch_from_diffs(SEED, [diff(fact("dynamic_state", 3, "summarize"))])
    clear, summarize = patch.guideline.policy.history
    assert isinstance(clear, Clear) and clear.classes == (RetentionClass.DYNAMIC_STATE,)
    assert isinstance(summarize, SummarizeOld) and RetentionClass.DYNAMIC_STATE not in summarize.classes
    assert validate(patch.guideline, SEED, ToolOutputIndex(), max_chars=10_000) is None


def test_a_loss_of_a_must_pin_class_pins_it():
    unpinned = _with(pinned=["write_receipt"])
    (patch, *_) = patch_from_diffs(unpinned, [diff(fact("skill", 3, "summarize"))])
    assert RetentionClass.SKILL in patch.guideline.policy.pinned


def test_no_losses_no_patch():
    assert patch_from_diffs(SEED, [diff()]) == []
    assert isinstance(SEED.policy.write[0], Compress)
