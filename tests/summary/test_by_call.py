"""The by-call question: lost facts shown in the ceiling's form, the optimizer's line checked like any UT line."""

from __future__ import annotations

from optimizer.summary.contract_text import learned_part, with_contract
from optimizer.summary.rewrite import by_call_step
from optimizer.summary.screen import LostFact

SEED = "Summarize the conversation so far."
PRICE = LostFact("t", 3, "value", "12.50", "static", "unit price: 12.50 EUR", "S", 'get_product({"sku": "SKU-9316"})')
RULE = LostFact(
    "t", 4, "rule", "R-9", "skill", "R-9: reserve at most the units in stock.", "S", 'read_skill({"name": "restock"})'
)


def test_the_question_shows_each_line_under_its_call_with_values_and_tools_hidden():
    prompts = []
    line = "Under each tool call, copy the result lines that hold a value or rule word for word."
    proposal = by_call_step(lambda p, t: prompts.append(p) or line, with_contract(SEED), [PRICE, RULE])
    shown = prompts[0]
    assert '- from <tool>({"sku": "<value>"}): unit price: <value> EUR' in shown
    assert '- from <tool>({"name": "restock"}): <value>: reserve at most the units in stock.' in shown
    assert not any(hidden in shown for hidden in ("SKU-9316", "12.50", "R-9", "get_product", "read_skill"))
    assert proposal.llm_lines == (line,) and line in learned_part(proposal.text)


def test_a_line_naming_the_tool_or_a_value_is_refused_and_the_next_passing_one_taken():
    reply = (
        "Always keep the get_product result under its call.\n"
        "Keep the price 12.50 exactly.\n"
        "Under each call, keep every line of its result that holds a needed value, word for word."
    )
    proposal = by_call_step(lambda p, t: reply, SEED, [PRICE])
    assert proposal.llm_lines == (
        "Under each call, keep every line of its result that holds a needed value, word for word.",
    )
    assert dict(proposal.refused) == {
        "Always keep the get_product result under its call.": "names a value or id from the examples",
        "Keep the price 12.50 exactly.": "names a value or id from the examples",
    }


def test_without_the_call_that_returned_a_fact_nothing_is_asked():
    unsourced = LostFact("t", 3, "value", "12.50", "static", "unit price: 12.50 EUR", "S")
    proposal = by_call_step(lambda p, t: (_ for _ in ()).throw(AssertionError("asked")), SEED, [unsourced])
    assert proposal.llm_lines == () and proposal.refused[0][1] == "no lost fact with the call that returned it"


def test_the_line_must_name_the_form_asked_for_not_a_kind_of_fact():
    # the 1.5B optimizer's second answer on 24 reach_long train tasks names the form and no kind of fact
    form = (
        "The summarizer should maintain the structure of the original data where every step includes the necessary "
        "tool call and its result, maintaining the same format and details as the original."
    )
    assert by_call_step(lambda p, t: form, SEED, [PRICE]).llm_lines == (form,)
    kinds_only = "Always keep every value and rule exactly as written."
    proposal = by_call_step(lambda p, t: kinds_only, SEED, [PRICE, RULE])
    assert proposal.llm_lines == ()
    assert dict(proposal.refused) == {kinds_only: "names no kind of fact that was lost (the call and its result)"}
