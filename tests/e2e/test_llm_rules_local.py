"""The optimizer LLM's job on the real local model: from a lost fact's line, write a rule that keeps
that kind of line and not the rest. Fails when the model's reply is garbage (no parse, no valid rule,
a rule that keeps the whole result or misses the line)."""

from __future__ import annotations

import dataclasses

import pytest

from optimizer.agent.loop import EpisodeServices, run_episode
from optimizer.context.extraction import Selection, parse_units, render, select
from optimizer.context.guideline import SEED_GUIDELINE, RetentionPolicy, read_guideline
from optimizer.context.strategies import GuidelineStrategy, parse_strategy
from optimizer.evaluate.endpoints import ModelEndpoints
from optimizer.llm import EndpointConfig
from optimizer.mining.pair_diff import diff_pair
from optimizer.mining.pairs import find_pairs
from optimizer.search.candidate import Candidate
from optimizer.search.proposers import LlmRewrite
from optimizer.search.proposers.base import Pair, ProposalInput
from optimizer.search.proposers.llm import OptimizerLM
from optimizer.world import CheckResult, Need, NeedKind
from optimizer.world.sources import need_sources
from tests.context.conftest import RecordingReference, Scripted, Workbench, make_task, ok

pytestmark = pytest.mark.llm

ORDER = "\n".join(
    [
        "order ORD-66682  placed 2024-04-29  status: delivered",
        *(f"LN-{310000 + i * 7} | Nordvik kettle {i}.0L, sand | qty 1 | EUR {20 + i}.50" for i in range(14)),
        "payment: card ending 8457, captured EUR 311.50",
        *(f"LN-{320000 + i * 7} | Lumea desk lamp {i}, ivory | qty 1 | EUR {30 + i}.25" for i in range(14)),
    ]
)
SCRIPT = (Scripted("read_file", {"path": "orders/ORD-66682.txt"}, ok(ORDER)),)
NEED = (Need(NeedKind.VALUE, "8457", guess="8458", source_class="static"),)


class Desk(Workbench):
    def check(self, answers):
        ok_ = "8457" in (answers[0] or "")
        return CheckResult(ok_, () if ok_ else ("wrong card",))


def test_the_local_optimizer_writes_a_selective_rule_for_the_lost_line():
    task = dataclasses.replace(
        make_task(SCRIPT, answer="card ending 8457", answer_needs=NEED), make_env=lambda: Desk(SCRIPT)
    )
    seed = read_guideline(SEED_GUIDELINE)
    policy = RetentionPolicy.model_validate(
        {
            "write": [
                {"move": "extract", "over": 100, "select": {"head": 1, "mention_task": False, "mention_calls": False}}
            ]
        }
    )
    parent = Candidate(seed.model_copy(update={"policy": policy}), "seed", 0)

    def episode(strategy):
        agent = RecordingReference(task.reference, sources=need_sources(task), recall_mode="never")
        return run_episode(task, agent, strategy, EpisodeServices())

    found = find_pairs([episode(parse_strategy("none"))], [episode(GuidelineStrategy(guideline=parent.guideline))])
    assert found
    pairs = [Pair(f, c, diff_pair(f, c, task), task) for f, c in found]
    with ModelEndpoints({"optimizer": EndpointConfig(max_tokens=256)}) as endpoints:
        llm = OptimizerLM(endpoints.client("optimizer"), seed=0)
        # The labelled line is one `extract_rules` covers, so by default the model is not asked about it
        # (`residual_only`); asked anyway, it must write that rule as well as the deterministic proposer does.
        (proposal,) = LlmRewrite(residual_only=False).propose(ProposalInput(parent, pairs, llm=llm))
    assert proposal.guideline is not None, proposal.error
    rules = proposal.guideline.policy.write[0].select.rules
    parsed = parse_units(ORDER)
    kept = render(
        parsed,
        select(
            parsed,
            Selection(rules=rules, mention_task=False, mention_calls=False, head=0),
            tool="read_file",
            terms=None,
        ),
    )
    assert "payment: card ending 8457" in kept, rules
    assert len(kept.splitlines()) <= 10, rules  # selective: not the order's 28 item rows
