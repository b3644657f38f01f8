"""The `reach` suite: solvable by its reference, strict about each fact it needs, and lossy under the baselines
the fidelity benchmark runs on it (otherwise tier 0 and tier 1 would agree for free)."""

from __future__ import annotations

import pytest

from optimizer.config import load_experiment
from optimizer.context.strategies import parse_strategy
from optimizer.evaluate.strategy_runs import run_strategy
from optimizer.world import CheckResult, NeedKind, ToolCall
from optimizer.world.needs import alter_text
from tasks import reach
from tasks.reach import GIFT_RULE, ORDER_IDS, ReachSuite
from tests.tasks.reference_run import execute as run_reference

SUITE = ReachSuite().load()
TASKS = {t.id: t for t in SUITE.tasks}
CONFIG = load_experiment("experiments/reach.toml").with_overrides(tracking={"enabled": False})


def execute(task_id: str, **change) -> CheckResult:
    return run_reference(TASKS[task_id], **change)


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_the_reference_executed_directly_passes(task_id):
    result = execute(task_id)
    assert result.passed, result.reasons


def test_every_class_the_contract_knows_is_needed_somewhere():
    classes = {n.source_class for t in SUITE.tasks for s in t.reference for n in s.needs}
    kinds = {n.kind for t in SUITE.tasks for s in t.reference for n in s.needs}
    assert classes == {"skill", "static", "error_partial", "dynamic_state", "write_receipt"}
    assert kinds == set(NeedKind)


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_an_answer_without_a_needed_value_fails(task_id):
    task = TASKS[task_id]
    final = next(s for s in reversed(task.reference) if s.call is None)
    values = [n for n in final.needs if n.kind is NeedKind.VALUE and (n.shown_as or n.literal) in final.answer]
    for need in values:
        wrong = final.answer.replace(need.shown_as or need.literal, str(need.guess or alter_text(need.literal)))
        assert not execute(task_id, answer=wrong).passed, need.literal


def test_the_gift_card_without_the_skills_verification_is_blocking():
    verify = next(i for i, s in enumerate(TASKS["reach-gift"].reference) if s.call and s.call.name == "verify_customer")
    result = execute("reach-gift", drop=verify)
    assert not result.passed
    assert any(GIFT_RULE in b for b in result.blocking)


@pytest.mark.parametrize(("task_id", "tool"), [("reach-gift", "send_gift_card"), ("reach-reserve", "reserve_stock")])
def test_a_repeated_write_is_a_duplicate(task_id, tool):
    calls = [s.call for s in TASKS[task_id].reference if s.call is not None]
    result = execute(task_id, repeat=next(i for i, c in enumerate(calls) if c.name == tool))
    assert not result.passed and "duplicate write" in result.blocking


def test_the_orders_answer_needs_both_pages():
    env = TASKS["reach-orders"].make_env()
    first = env.call(ToolCall("c1", "list_orders", {"customer_id": "CUS-318", "page": 1}), 0)
    assert first.partial and "page 1 of 2" in first.must_keep[0]
    assert not env.check([", ".join(ORDER_IDS[:3])]).passed
    beyond = env.call(ToolCall("c2", "list_orders", {"customer_id": "CUS-318", "page": 3}), 0)
    assert beyond.is_error  # not an empty "page 3 of 2" that a small model pages through forever


def test_each_task_offers_only_the_tools_it_uses():
    for task in SUITE.tasks:
        offered = {spec.name for spec in task.make_env().tools(0)}
        assert offered == {s.call.name for s in task.reference if s.call is not None}, task.id


def test_the_fingerprint_follows_the_tasks_content(monkeypatch):
    before = ReachSuite().fingerprint()
    original = reach._tasks

    def edited():
        first, *rest = original()
        turn = type(first.turns[0])(first.turns[0].content + " Be brief.")
        return (type(first)(first.id, first.suite, (turn,), first.make_env, first.reference), *rest)

    monkeypatch.setattr(reach, "_tasks", edited)
    assert ReachSuite().fingerprint() != before


def _tier0(tmp_path, strategy, recall="honest"):
    config = CONFIG.with_overrides(run={"recall": recall})
    result = run_strategy(config, SUITE.tasks, strategy, agent="reference", endpoints=None, split="all", base=tmp_path)
    return {e.task_id: e.success for e in result.episodes.summaries}


def test_tier0_solves_everything_with_full_context(tmp_path):
    assert all(_tier0(tmp_path, parse_strategy("none")).values())


def test_the_fidelity_baselines_lose_facts_here(tmp_path):
    mask = parse_strategy({"type": "mask_last_n", "n": 1, "keep_first": False})
    offload = parse_strategy({"type": "offload_preview", "max_tokens": 250, "head_tokens": 60, "tail_tokens": 30})
    assert {t for t, ok in _tier0(tmp_path, mask).items() if not ok} == {
        "reach-price-compare",
        "reach-orders",
        "reach-reserve",
    }
    # What the offload cuts, a recall brings back; an agent that never recalls fails the price reads.
    assert all(_tier0(tmp_path, offload).values())
    never = _tier0(tmp_path, offload, recall="never")
    assert {t for t, ok in never.items() if not ok} == {"reach-price", "reach-price-compare", "reach-reserve"}


def test_the_recall_probability_knob_spans_never_to_honest_and_is_deterministic(tmp_path):
    offload = parse_strategy({"type": "offload_preview", "max_tokens": 250, "head_tokens": 60, "tail_tokens": 30})

    def verdicts(p: float, base) -> dict[str, bool]:
        config = CONFIG.with_overrides(run={"recall": "honest", "recall_probability": p})
        result = run_strategy(config, SUITE.tasks, offload, agent="reference", endpoints=None, split="all", base=base)
        return {e.task_id: e.success for e in result.episodes.summaries}

    assert verdicts(0.0, tmp_path / "a") == _tier0(tmp_path / "b", offload, recall="never")
    assert verdicts(1.0, tmp_path / "c") == _tier0(tmp_path / "d", offload)
    half = verdicts(0.5, tmp_path / "e")
    assert half == verdicts(0.5, tmp_path / "f")  # the same draw every run, not a coin per run
    honest, never = _tier0(tmp_path / "g", offload), _tier0(tmp_path / "h", offload, recall="never")
    assert all(never[t] <= half[t] <= honest[t] for t in half)
