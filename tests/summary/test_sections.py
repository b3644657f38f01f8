"""The section question: a layout's lost kind with no section gets one, written by the optimizer and checked."""

from __future__ import annotations

import pytest

from optimizer.summary.contract_text import HEADER, learned_part, with_contract
from optimizer.summary.layouts import FACTS_FIRST
from optimizer.summary.screen import LostFact
from optimizer.summary.sections import SECTION_CUE, section_step, sections_of, uncovered, with_section

_RULE_LINE = "R-9: reserve at most the units in stock."
RULE = LostFact("t", 4, "rule", _RULE_LINE, "skill", _RULE_LINE, "S")  # a rule is needed as its whole line
PRICE = LostFact("t", 3, "value", "12.50", "static", "unit price: 12.50 EUR", "S")
ERROR = LostFact("t", 5, "error", "ERR-42 out of stock", "error_partial", "ERR-42 out of stock", "S")
RULES_LINE = "RULES: each rule the agent read, copied exactly as it was written."


def _never(prompt: str, temperature: float) -> str:
    raise AssertionError("the optimizer was asked")


def test_sections_are_read_with_their_wrapped_lines_and_not_the_prose_after_them():
    found = dict(sections_of(with_contract(FACTS_FIRST)))
    assert list(found) == ["VARIABLES", "DONE", "ERRORS AND WARNINGS", "PROGRESS"]
    assert found["VARIABLES"].endswith("never round, shorten or invent one.")
    assert found["PROGRESS"] == "PROGRESS: one line: what is done and the next step."


def test_only_kinds_no_section_names_are_asked_for_most_lost_first():
    sections = sections_of(FACTS_FIRST)
    assert uncovered([PRICE, ERROR, RULE, RULE], sections) == ["rule"]
    assert uncovered([RULE], [("STEPS", "STEPS: each step the agent took.")]) == ["rule"]


def test_the_section_goes_before_the_last_one_and_the_contract_stays_below():
    text = with_section(with_contract(FACTS_FIRST), RULES_LINE)
    lines = learned_part(text).splitlines()
    assert lines.index(RULES_LINE) == next(i for i, line in enumerate(lines) if line.startswith("PROGRESS:")) - 1
    assert text.count(HEADER) == 1 and text.index(RULES_LINE) < text.index(HEADER)


def test_the_question_lists_the_sections_hides_the_example_and_takes_the_section():
    prompts: list[str] = []
    proposal = section_step(lambda p, t: prompts.append(p) or f"{SECTION_CUE} {RULES_LINE}", FACTS_FIRST, [RULE, PRICE])
    assert len(prompts) == 1 and "word for word.\nPROGRESS: one line: what is done" in prompts[0]
    assert "R-9" not in prompts[0] and "reserve at most" not in prompts[0]
    assert proposal.step == "section" and proposal.llm_lines == (RULES_LINE,)
    assert [name for name, _ in sections_of(proposal.text)][-2:] == ["RULES", "PROGRESS"]


def test_a_line_that_is_not_a_new_targeted_section_is_refused_with_its_reason():
    reply = "\n".join(
        [
            "Keep every rule word for word.",  # a sentence, not a section
            "DONE: every rule the agent read, word for word.",  # a name already there
            "RULES: the rules.",  # too short
            "STEPS: every step the agent took and why it took it.",  # names no rule
        ]
    )
    proposal = section_step(lambda p, t: reply, FACTS_FIRST, [RULE])
    assert proposal.llm_lines == () and proposal.text == with_contract(FACTS_FIRST)
    assert [why for _, why in proposal.refused] == [
        "not a section line (NAME: what goes under it)",
        "a section of that name is there already",
        "too short to say what the section holds",
        "names no kind of fact that was lost (rule)",
    ]
    # the 1.5B optimizer's answer on 12 train tasks: the failure, not what goes under the section
    described = section_step(lambda p, t: "AGENT: No specific information about the lost rule.", FACTS_FIRST, [RULE])
    assert [why for _, why in described.refused] == ["describes the loss, not what the section holds"]


def test_a_text_without_sections_or_a_lost_kind_they_miss_asks_nothing():
    plain = section_step(_never, "Summarize the conversation so far.", [RULE])
    assert plain.refused == [("", "the text is not a layout of sections")]
    covered = section_step(_never, FACTS_FIRST, [PRICE, ERROR])
    assert covered.refused == [("", "every lost kind has a section")]


def test_a_name_alone_is_asked_what_goes_under_it_and_the_two_answers_make_the_section():
    prompts: list[str] = []
    replies = iter(["SKILL_POLICY_RULES", "SKILL POLICY RULES: each rule the agent read, copied word for word."])
    proposal = section_step(lambda p, t: prompts.append(p) or next(replies), FACTS_FIRST, [RULE])
    assert len(prompts) == 2 and prompts[1].endswith("SKILL POLICY RULES:")
    assert proposal.llm_lines == ("SKILL POLICY RULES: each rule the agent read, copied word for word.",)
    assert proposal.reply.count("---") == 1  # both replies kept for the report


@pytest.mark.parametrize(
    "echoed",
    [
        "REPORT: a rule from a skill or policy the agent read, which a later step must follow word for word",
        "SKILL OR POLICY FOLLOWED: every rule from a skill or policy the agent read, which a later step must follow "
        "word for word",
    ],
)
def test_a_section_in_the_questions_own_words_is_refused(echoed):
    proposal = section_step(lambda p, t: echoed, FACTS_FIRST, [RULE])
    assert proposal.llm_lines == () and proposal.refused == [(echoed, "restates the question")]


def test_a_snake_case_name_is_read_as_words():
    line = "SKILL_POLICY_RULES: each rule the agent read, copied exactly with its number."
    proposal = section_step(lambda p, t: line, FACTS_FIRST, [RULE])
    assert proposal.llm_lines == ("SKILL POLICY RULES: each rule the agent read, copied exactly with its number.",)
