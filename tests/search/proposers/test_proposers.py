"""Every proposer on a real pair: the workbench task whose answer needs the bin printed in the catalogue
(`FACT-STATIC-77: widget W-778 ships from bin B-14.`), lost by a lossy parent policy."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from optimizer.context.extraction import ExtractRule, parse_units
from optimizer.context.guideline import SEED_GUIDELINE, RetentionPolicy, read_guideline
from optimizer.context.moves import Clear, Extract, Offload
from optimizer.context.strategies import GuidelineStrategy, parse_strategy
from optimizer.mining.pair_diff import diff_pair
from optimizer.mining.pairs import find_pairs
from optimizer.search.candidate import Candidate
from optimizer.search.lineage import changes
from optimizer.search.proposers import ExtractRules, Graft, LlmRewrite, LlmShorten, Patch, Tighten
from optimizer.search.proposers.base import Pair, ProposalInput
from optimizer.search.proposers.extract_rules import derive_rule, shape_pattern
from optimizer.search.validate import ToolOutputIndex, validate
from tests.context.conftest import CATALOG, NEEDS_BIN, bin_episode, run

SEED = read_guideline(SEED_GUIDELINE)


def candidate(**policy) -> Candidate:
    guideline = SEED.model_copy(update={"policy": RetentionPolicy.model_validate(policy), "name": "parent"})
    return Candidate(guideline, "seed", 0)


# Keeps only the first line of a large static result, so the bin's line is lost. The agent never recalls
# (the extract names a handle, which an honest agent would use), so the loss is a failure, not a near miss.
LOSSY = {
    "write": [
        {
            "move": "extract",
            "classes": ["static"],
            "over": 300,
            "select": {"head": 1, "mention_task": False, "mention_calls": False},
        }
    ]
}


@pytest.fixture(scope="module")
def lossy_pairs():
    parent = candidate(**LOSSY)
    return parent, pairs_of_never(parent)


def pairs_of_never(parent: Candidate) -> list[Pair]:
    task, full = bin_episode(parse_strategy("none"))
    _, lossy = bin_episode(GuidelineStrategy(guideline=parent.guideline))
    found = find_pairs([full], [lossy])
    assert found, "the parent must lose the bin"
    return [Pair(f, c, diff_pair(f, c, task), task) for f, c in found]


def test_the_pair_names_the_lost_bin_and_its_source(lossy_pairs):
    _, pairs = lossy_pairs
    fact = next(f for f in pairs[0].diff.missing if f.literal == "B-14")
    assert (fact.retention, fact.checkpoint, fact.record["action"]) == ("static", 2, "extract")
    raw, tool = pairs[0].source_text(fact.source_entry)
    assert raw == CATALOG and tool == "read_file"


def test_patch_keeps_more_of_the_class_the_extraction_lost(lossy_pairs):
    parent, pairs = lossy_pairs
    (proposal,) = Patch().propose(ProposalInput(parent, pairs))
    select = proposal.guideline.policy.write[0].select
    assert (select.head, select.min_words) == (3, 2)
    assert "keep more of fresh static results" in proposal.rationale


def test_extract_rules_learns_a_rule_for_the_kind_of_line_that_held_the_fact(lossy_pairs):
    parent, pairs = lossy_pairs
    (proposal,) = ExtractRules().propose(ProposalInput(parent, pairs))
    (rule,) = proposal.guideline.policy.write[0].select.rules
    assert rule.tool == "read_file" and "B-14" not in rule.pattern
    result = run(
        GuidelineStrategy(guideline=proposal.guideline), answer="ORD-5521 from bin B-14", answer_needs=NEEDS_BIN
    )
    assert result.visible_at_end("FACT-STATIC-77: widget W-778 ships from bin B-14.")
    assert not result.visible_at_end("catalog note 40:")  # the rule is selective
    assert validate(proposal.guideline, parent.guideline, ToolOutputIndex([CATALOG]), max_chars=10_000) is None


def test_derive_rule_prefers_a_label_and_refuses_broad_rules():
    listing = "\n".join(
        [
            "order ORD-1 status: delivered",
            "payment: card ending 8457, captured EUR 12.00",
            *(f"LN-{i:06d} | item {i} | EUR {i}.00" for i in range(30)),
        ]
    )
    parsed = parse_units(listing)
    assert derive_rule(parsed, "8457", "get_order", max_share=0.34).pattern == r"^\s*payment\s*[:=|]"
    assert derive_rule(parsed, "LN-000007", "get_order", max_share=0.34) is None  # every row has that shape
    assert shape_pattern("RFD-DC2A3") == r"\b[A-Z]+\-[A-Z]+\d+[A-Z]+\d+\b"


def test_extract_rules_adds_an_extraction_where_the_parent_had_none():
    parent = candidate(
        write=[{"move": "offload", "classes": ["static"], "over": 300, "head_tokens": 20, "tail_tokens": 0}]
    )
    pairs = pairs_of_never(parent)
    (proposal,) = ExtractRules().propose(ProposalInput(parent, pairs))
    first, second = proposal.guideline.policy.write
    assert isinstance(first, Extract) and first.select.rules and isinstance(second, Offload)


def test_graft_adds_moves_the_parent_lacks_from_other_candidates_first():
    parent = candidate(write=[{"move": "offload", "over": 800}])
    other = candidate(history=[{"move": "clear", "trigger_tokens": 1500, "keep_last": 1}])
    proposals = Graft().propose(ProposalInput(parent, (), others=[other]))
    added = [(p.guideline.policy.write, p.guideline.policy.history) for p in proposals]
    assert (parent.guideline.policy.write, (Clear(trigger_tokens=1500, keep_last=1, over=200),)) in added  # floored
    assert any(isinstance(w[0], Extract) for w, _ in added)  # the default extraction, in front of the offload
    assert all(not any(m.uses_compressor for m in (*w, *h)) for w, h in added)


def test_tighten_offers_one_variant_per_knob():
    parent = candidate(
        write=[
            {"move": "extract", "over": 1000, "select": {"min_words": 3, "head": 2}},
            {"move": "compress", "classes": ["static"], "over": 1000, "max_tokens": 160},
        ],
        history=[{"move": "summarize", "over": 2000, "keep_last": 2, "max_tokens": 250}],
    )
    variants = {
        p.guideline.name.rsplit("+", 1)[1]: p.guideline.policy for p in Tighten().propose(ProposalInput(parent, ()))
    }
    assert set(variants) == {"lower", "short", "fewer", "strict", "distinct", "rare", "rare_fewer"}
    assert (variants["rare"].write[0].select.max_word_share, variants["rare"].write[0].select.min_words) == (0.5, 3)
    rare_fewer = variants["rare_fewer"].write[0].select
    assert (rare_fewer.max_word_share, rare_fewer.min_words) == (0.5, 2)
    assert (variants["lower"].write[0].over, variants["lower"].history[0].over) == (600, 1200)
    assert (variants["short"].write[1].max_tokens, variants["short"].history[0].max_tokens) == (96, 150)
    assert variants["fewer"].history[0].keep_last == 1
    assert (variants["strict"].write[0].select.min_words, variants["strict"].write[0].select.head) == (4, 1)
    assert variants["distinct"].write[0].select.max_term_share == 0.5
    halved = Tighten().propose(
        ProposalInput(Candidate(SEED.model_copy(update={"policy": variants["distinct"]}), "t", 1), ())
    )
    assert {p.guideline.name.rsplit("+", 1)[1]: p.guideline.policy for p in halved}["distinct"].write[
        0
    ].select.max_term_share == 0.25
    floor = candidate(
        write=[{"move": "compress", "over": 128, "max_tokens": 64}],
        history=[{"move": "summarize", "over": 128, "keep_last": 1, "max_tokens": 96}],
    )
    assert Tighten().propose(ProposalInput(floor, ())) == []


class FakeLM:
    """The optimizer session as the LLM proposers see it, with a scripted reply."""

    def __init__(self, **fields) -> None:
        self.fields = fields
        self.tokens = 0
        self.prompts: list[dict] = []

    def run(self, signature, *, temperature, seed, **inputs):
        self.prompts.append(inputs)
        self.tokens += 100
        return SimpleNamespace(**self.fields)


def test_llm_rewrite_applies_valid_rules_and_refuses_ones_that_name_a_value(lossy_pairs):
    parent, pairs = lossy_pairs
    lm = FakeLM(
        rules='[{"pattern": "^FACT-[A-Z]+-\\\\d+:", "tool": "read_file"}, {"pattern": "B-14"}, '
        '{"pattern": "(a)\\\\1"}, {"pattern": "^no such line"}]',
        instruction_edit="none",
    )
    (proposal,) = LlmRewrite(residual_only=False).propose(ProposalInput(parent, pairs, llm=lm))
    assert proposal.llm and proposal.optimizer_tokens == 100
    learned = ExtractRule(pattern=r"^FACT-[A-Z]+-\d+:", tool="read_file")
    assert proposal.guideline.policy.write[0].select.rules == (learned,)
    assert "names a value or id from the examples" in proposal.rationale
    assert "/^no such line/ keeps no line that held a lost fact" in proposal.rationale
    examples = lm.prompts[0]["examples"]
    assert "result of read_file (static; dropped by extract):" in examples
    assert "NEEDED: FACT-STATIC-77: widget W-778 ships from bin <VALUE>." in examples and "B-14" not in examples
    assert examples.startswith("<data") or "<data" in examples  # fenced as untrusted


def test_llm_rewrite_records_a_reply_it_cannot_use_as_a_failed_proposal(lossy_pairs):
    parent, pairs = lossy_pairs
    lm = FakeLM(rules="n/a", instruction_edit="")
    (proposal,) = LlmRewrite(residual_only=False).propose(ProposalInput(parent, pairs, llm=lm))
    assert proposal.guideline is None and "no JSON list" in proposal.error


def test_llm_rewrite_makes_no_call_for_a_loss_extract_rules_already_covers(lossy_pairs):
    parent, pairs = lossy_pairs
    assert ExtractRules().propose(ProposalInput(parent, pairs))  # the bin's labelled line gives a rule
    lm = FakeLM(rules="[]", instruction_edit="")
    assert LlmRewrite().propose(ProposalInput(parent, pairs, llm=lm)) == [] and lm.prompts == []


TICKETS = "\n".join(
    [
        "queue returns-eu: 6 open tickets",
        "TCK-1001 | P3 | open | AG-7 (you) | Warranty question",
        "TCK-1002 | P2 | open | AG-2 | Wrong size sent",
        "TCK-1003 | P3 | open | AG-5 | Item arrived damaged",
        "TCK-1004 | P1 | open | AG-7 (you) | Charged twice",
        "TCK-1005 | P3 | open | AG-2 | Invoice address is wrong",
        "TCK-1006 | P2 | open | AG-5 | Late delivery",
        "TCK-1007 | P3 | open | AG-9 | Missing parts",
    ]
)


def table_pair() -> SimpleNamespace:
    """A pair whose lost facts are rows of a listing: the ids start their lines, so no label or shape rule
    separates them (the duck-typed parts of `Pair` that the LLM proposer reads)."""
    lost = [
        SimpleNamespace(literal=t, retention="static", source_entry=3, record={"action": "clear"})
        for t in ("TCK-1001", "TCK-1004")
    ]
    return SimpleNamespace(
        diff=SimpleNamespace(missing=lost),
        compressed=SimpleNamespace(task_id="ticket_queue-02"),
        task=SimpleNamespace(instruction="You are support agent AG-7. Work through your own open tickets."),
        source_text=lambda entry: (TICKETS, "list_tickets") if entry == 3 else None,
    )


def test_llm_rewrite_gets_the_rows_extract_rules_cannot_separate_and_refuses_ids():
    pair = table_pair()
    parsed = parse_units(TICKETS)
    assert all(derive_rule(parsed, f.literal, "list_tickets", max_share=0.34) is None for f in pair.diff.missing)
    reply = r'[{"pattern": "AG-7"}, {"pattern": "\\| open \\|"}, {"pattern": "\\(you\\)"}]'
    lm = FakeLM(rules=reply, instruction_edit="none")
    (proposal,) = LlmRewrite().propose(ProposalInput(candidate(**LOSSY), [pair], llm=lm))
    examples = lm.prompts[0]["examples"]
    assert "request: You are support agent AG-7. Work through your own open tickets." in examples
    assert "NEEDED: <VALUE> | P3 | open | AG-7 (you) | Warranty question" in examples
    assert "NEEDED: <VALUE> | P1 | open | AG-7 (you) | Charged twice" in examples
    # the dropped lines shown are rows of the same shape, not the listing's header
    assert "DROPPED: TCK-1002 | P2 | open | AG-2 | Wrong size sent" in examples and "DROPPED: queue" not in examples
    assert proposal.guideline.policy.write[0].select.rules == (ExtractRule(pattern=r"\(you\)"),)
    assert "/AG-7/ names a value or id from the examples" in proposal.rationale
    assert "too broad" in proposal.rationale  # every row is open


def test_llm_shorten_only_for_policies_with_an_llm_move(lossy_pairs):
    parent, pairs = lossy_pairs
    lm = FakeLM(new_history_instruction="Short.", new_observation_instruction="Shorter.")
    assert LlmShorten().propose(ProposalInput(parent, (), successes=[pairs[0].full], llm=lm)) == []
    seedish = Candidate(SEED, "seed", 0)
    (proposal,) = LlmShorten().propose(ProposalInput(seedish, (), successes=[pairs[0].full], llm=lm))
    assert (proposal.guideline.history, proposal.guideline.observation) == ("Short.", "Shorter.")


def test_every_proposer_is_in_the_union_and_the_defaults():
    from optimizer.search.proposers import DEFAULT_PROPOSERS, PROPOSER_CLASSES

    defaults = {c.model_fields["type"].default for c in PROPOSER_CLASSES if c.in_default}
    assert {p.type for p in DEFAULT_PROPOSERS} == defaults
    assert {c.model_fields["type"].default for c in PROPOSER_CLASSES} - defaults == {"batch", "relax"}
    assert {c.step for c in PROPOSER_CLASSES} == {"ut", "co"}


def test_batch_proposes_fewer_prefix_rebuilds_above_the_parents_batch():
    from optimizer.search.proposers import Batch

    clearing = candidate(history=[{"move": "clear", "trigger_tokens": 2000, "keep_last": 1}])
    proposals = Batch().propose(ProposalInput(clearing, ()))
    assert [p.guideline.policy.batch_tokens for p in proposals] == [500, 2000]
    assert all(p.guideline.policy.history == clearing.guideline.policy.history for p in proposals)
    batched = Candidate(proposals[0].guideline, "batch", 1)
    assert [p.guideline.policy.batch_tokens for p in Batch().propose(ProposalInput(batched, ()))] == [2000]
    assert Batch().propose(ProposalInput(candidate(**LOSSY), ())) == []  # no history moves: nothing to batch


def test_the_lineage_names_a_knob_the_dump_leaves_out_while_off():
    parent = candidate(write=[{"move": "extract", "over": 300}]).guideline
    (distinct,) = [
        p for p in Tighten().propose(ProposalInput(Candidate(parent, "seed", 0), ())) if "distinct" in p.guideline.name
    ]
    assert "write extract: max_term_share 1.0 -> 0.5" in changes(parent, distinct.guideline)


def test_a_child_lists_recall_as_its_parent_even_from_a_policy_built_afresh():
    from optimizer.context.guideline import SEED_GUIDELINE, RetentionPolicy, read_guideline
    from optimizer.search.proposers.base import derived

    seed = read_guideline(SEED_GUIDELINE)
    parent = seed.model_copy(update={"policy": seed.policy.model_copy(update={"recall_tool": "never"})})
    fresh = RetentionPolicy(pinned=parent.policy.pinned, write=parent.policy.write, history=parent.policy.history)
    assert fresh.recall_tool == "once_cleared"  # what extract_rules, patch and the LLM rewrite build
    child = derived(parent, fresh, "rules")
    assert child.policy.recall_tool == "never" and child.name == "seed+rules"


def test_relax_offers_milder_cuts_one_change_each():
    from optimizer.context.moves import ExtractOld
    from optimizer.search.proposers import Relax

    select = {"min_words": 3, "head": 1}
    parent = candidate(
        write=[{"move": "extract", "classes": ["static"], "over": 200, "select": select}],
        history=[{"move": "mask", "classes": ["dynamic_state"], "keep_last": 3, "over": 0}],
        recall_tool="never",
    )
    variants = {
        p.guideline.name.rsplit("+", 1)[1]: p.guideline.policy for p in Relax().propose(ProposalInput(parent, ()))
    }
    policy = parent.guideline.policy
    assert variants["without_write0"].write == () and variants["without_write0"].history == policy.history
    assert variants["without_history0"].write == policy.write and variants["without_history0"].history == ()
    deferred = variants["defer"]
    assert deferred.write == () and [m.move for m in deferred.history] == ["extract_old", "mask"]
    later = deferred.history[0]
    assert isinstance(later, ExtractOld) and later.keep_last == 1 and later.over == 200
    assert later.select == policy.write[0].select and later.classes == policy.write[0].classes
    assert variants["loose_lower"].write[0].over == 333 and variants["loose_fewer"].history[0].keep_last == 4
    assert variants["loose_strict"].write[0].select.min_words == 2
    assert all(v.recall_tool == "never" and v != policy for v in variants.values())
    single = candidate(history=[{"move": "mask", "keep_last": 3, "over": 0}])
    assert not any("without" in p.guideline.name for p in Relax().propose(ProposalInput(single, ())))


def test_a_patched_child_keeps_the_parents_batching(lossy_pairs):
    parent, pairs = lossy_pairs
    batched = parent.guideline.model_copy(
        update={"policy": parent.guideline.policy.model_copy(update={"batch_tokens": 2000})}
    )
    proposals = [
        *Patch().propose(ProposalInput(Candidate(batched, "seed", 0), pairs)),
        *ExtractRules().propose(ProposalInput(Candidate(batched, "seed", 0), pairs)),
    ]
    assert proposals and all(p.guideline.policy.batch_tokens == 2000 for p in proposals)
