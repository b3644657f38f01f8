"""Screening, the UT/CO steps and the loop, on the workbench task with a scripted summarizer and optimizer.

The summarizer keeps a history line only when the instructions ask for its kind, so what a text keeps is
decided by the text, as it is with a real model, and every score below follows from the instructions.
"""

from __future__ import annotations

import dataclasses
import re
from itertools import pairwise

import pytest

from optimizer.context.summary_template import CLOSING_LEAD, summary_prompt
from optimizer.summary.anthropic_target import AnthropicCompaction
from optimizer.summary.contract_text import HEADER, closing_part, learned_part, with_contract
from optimizer.summary.langchain_target import LangChainSummary
from optimizer.summary.rewrite import SHORTEN_CUE, co_step, llm_lines, minibatch, placed, ut_step
from optimizer.summary.screen import LostFact, ScreenResult, SummaryScore, TaskScreen, repeated, screen
from optimizer.summary.search import _ut_verdict, learn, rank
from optimizer.world import Need, NeedKind
from tests.context.conftest import TASK, compressor_for, make_task  # noqa: F401 - fixture

NEEDS = (
    Need(NeedKind.VALUE, "B-14", guess="B-00", source_class="static"),
    Need(NeedKind.RULE, "RULE-TAIL-03"),
)
SEED = "Summarize the conversation so far."


def task():
    return make_task(answer="ORD-5521 from bin B-14", answer_needs=NEEDS)


def summarizer(request: dict) -> str:
    prompt = request["messages"][-1]["content"]
    instructions, _, history = prompt.partition("<messages>")
    lines = [line.strip() for line in history.splitlines()]
    keep = []
    if "identifier" in instructions:
        keep += [line for line in lines if line.startswith("FACT-")]
    if "rules verbatim" in instructions:
        keep += [line for line in lines if line.startswith("RULE-")]
    return "Summary of the work so far.\n" + "\n".join(dict.fromkeys(keep))


def target(text):
    return LangChainSummary(trigger_tokens=1500, keep_messages=4, instructions=text)


def test_the_screen_scores_what_each_summary_kept(compressor_for):  # noqa: F811
    compressor, _ = compressor_for(summarizer)
    plain = screen(target(SEED), [task()], compressor)
    assert plain.needed >= 2 and plain.kept == 0 and plain.visible_share == 0.0
    lost = {(f.kind, f.literal, f.source_class) for f in plain.lost}
    assert ("value", "B-14", "static") in lost and ("rule", "RULE-TAIL-03", "skill") in lost
    rule = next(f for f in plain.lost if f.kind == "rule")
    assert rule.source.startswith("RULE-TAIL-03:") and "Summary of the work" in rule.summary
    # the call whose result held each fact, as the agent made it: what the by-call question shows
    assert all(re.fullmatch(r"\w+\(\{.*\}\)", f.source_call) for f in plain.lost)
    contract = screen(target(with_contract(SEED)), [task()], compressor)
    # The contract's skill line makes the summarizer copy rules; the bin still needs an instruction.
    assert {f.literal for f in contract.lost} == {"B-14"}
    assert contract.kept_share > plain.kept_share


def test_a_paraphrased_rule_is_not_kept(compressor_for):  # noqa: F811
    def paraphrase(request: dict) -> str:
        return "RULE-TAIL-03 says to report the id."

    compressor, _ = compressor_for(paraphrase)
    result = screen(target(SEED), [task()], compressor)
    assert "RULE-TAIL-03" in {f.literal for f in result.lost}


FACT = LostFact("t", 3, "value", "B-14", "static", "FACT-STATIC-77: widget W-778 ships from bin B-14.", "S")


def test_ut_keeps_targeted_lines_and_says_why_it_refused_the_rest():
    reply = "1. Keep every identifier and location code the task names.\n- Always keep B-14.\n- Be brief."
    prompts = []
    proposal = ut_step(lambda p, t: prompts.append(p) or reply, with_contract(SEED), [FACT])
    assert proposal.llm_lines == ("Keep every identifier and location code the task names.",)
    assert dict(proposal.refused) == {
        "Always keep B-14.": "names a value or id from the examples",
        "Be brief.": "too short to be an instruction",
    }
    assert learned_part(proposal.text) == SEED + "\nKeep every identifier and location code the task names."
    assert proposal.text.count(HEADER) == 1
    # One question for the one kind lost; its example line with every value hidden, and no instructions or
    # summary for a small model to continue.
    assert len(prompts) == 1 and "an identifier or value a later step needs" in prompts[0]
    assert "ships from bin <value>" in prompts[0]
    assert not any(v in prompts[0] for v in ("B-14", "W-778", "FACT-STATIC-77", SEED))


def test_one_question_per_kind_and_one_line_each():
    rule = dataclasses.replace(FACT, kind="rule", literal="RULE-TAIL-03", source="RULE-TAIL-03: report the id.")
    replies = {
        "identifier or value": "Keep every identifier a later step needs.\nAlso keep every amount a later step needs.",
        "rule from a skill": "Copy each rule from a skill file word for word.",
    }
    asked = []

    def lm(prompt, temperature):
        asked.append(prompt)
        return next(reply for key, reply in replies.items() if key in prompt)

    proposal = ut_step(lm, SEED, [FACT, rule])
    assert len(asked) == 2
    assert set(proposal.llm_lines) == {
        "Keep every identifier a later step needs.",
        "Copy each rule from a skill file word for word.",
    }
    assert dict(proposal.refused) == {"Also keep every amount a later step needs.": "one line per kind of fact"}


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        # What the 1.5B optimizer wrote when it was shown the instructions and a summary: a summary row.
        ("refund_id = SKILL-1", "names an id-like value"),
        ("refund status = pending for the refund", "a `name = value` row, not an instruction"),
        ("PROGRESS: The agent has already completed the refund process.", "a `name = value` row, not an instruction"),
        ("The summary is about the refund and its rules.", "gives no instruction (no keep, copy, include, never, ...)"),
        ("Keep order 55123 in mind.", "names an id-like value"),
        # What it wrote for a lost rule with the 1.5B summarizer: an account of the failure, passing on "must".
        (
            "A summarizer condenses the earlier steps of an AI agent's work, but it loses the specific rule from a "
            "skill or policy that a later step must follow word for word.",
            "describes the loss instead of instructing",
        ),
    ],
)
def test_a_line_that_is_not_an_instruction_is_refused(line, reason):
    proposal = ut_step(lambda p, t: line, SEED, [dataclasses.replace(FACT, kind="receipt", literal="R-1")])
    assert proposal.llm_lines == () and dict(proposal.refused) == {line: reason}


def test_an_instruction_in_the_optimizers_own_words_is_not_refused_for_its_verb():
    # The 1.5B optimizer's form ("A summarizer should maintain the key information about ..."): a modal and a
    # verb the first checks did not list, refused then as giving no instruction.
    line = "A summarizer should maintain every id that a write returned."
    proposal = ut_step(lambda p, t: line, SEED, [dataclasses.replace(FACT, kind="receipt", literal="R-1")])
    assert proposal.llm_lines == (line,)


def test_an_instruction_about_lost_facts_is_not_a_description():
    line = "Never drop a receipt id that was returned, even one that was lost from an earlier summary."
    proposal = ut_step(lambda p, t: line, SEED, [dataclasses.replace(FACT, kind="receipt", literal="R-1")])
    assert proposal.llm_lines == (line,)


def test_a_line_that_copies_the_example_words_is_refused():
    # What the 1.5B model wrote for a skill rule: the task's own rule, quoted; a line that fits one task.
    rule = LostFact(
        "t", 2, "rule", "R-9", "skill", "R-9: call verify_customer for the customer before send_gift_card.", "S"
    )
    line = 'Always keep the order: "call verify_customer for the customer before send_gift_card."'
    proposal = ut_step(lambda p, t: line, SEED, [rule])
    assert proposal.llm_lines == () and dict(proposal.refused) == {line: "copies words of the example"}


def test_an_id_copied_from_the_source_line_is_refused():
    proposal = ut_step(lambda p, t: "Keep values like W-778 in bins.", SEED, [FACT])
    assert proposal.llm_lines == () and proposal.refused[0][1] == "names a value or id from the examples"


def test_the_minibatch_takes_each_kind_in_turn():
    facts = [dataclasses.replace(FACT, literal=f"V-{i}") for i in range(5)] + [
        dataclasses.replace(FACT, kind="error", literal="E-1")
    ]
    assert {f.kind for f in minibatch(facts, 2, seed=0)} == {"value", "error"}


def test_co_marks_a_collapse():
    long = "\n".join(f"Keep the {w} of every step, in the order they happened, with their ids." for w in "abcdef")
    proposal = co_step(lambda p, t: "Keep ids.", long, [], set())
    assert proposal.collapse and learned_part(proposal.text) == "Keep ids."
    assert llm_lines(proposal.text, long) == ["Keep ids."]


def test_the_loop_learns_a_line_that_survives_selection(compressor_for):  # noqa: F811
    compressor, _ = compressor_for(summarizer)
    replies = iter(
        ["Keep every identifier and location code the task names.\nAlways write in plain English.", "Summarize."]
    )
    record = learn(target, SEED, [task()], [task()], compressor, lambda p, t: next(replies), candidates=1)
    best = record.best()
    assert best.name == "ut1.0" and best.llm_lines == ("Keep every identifier and location code the task names.",)
    assert best.val is not None and best.val.kept_share == 1.0 and best.val.visible_share == 1.0
    seed_val = record.seed.val
    assert seed_val is not None and seed_val.kept_share < 1.0
    verdicts = {a.candidate: a.verdict for a in record.attempts}
    assert verdicts["ut1.0"].startswith("chosen")
    # The CO rewrite lost the learned line (and the bin with it): not better, so not chosen.
    assert not verdicts["co1"].startswith("chosen")
    data = record.to_dict()
    assert data["chosen"] == "ut1.0" and data["attempts"][0]["refused"][0]["reason"].startswith("names no kind")


def test_nothing_is_summarized_twice_across_candidates(compressor_for):  # noqa: F811
    compressor, server = compressor_for(summarizer)
    from optimizer.llm.cache import ResponseCache

    compressor.cache = ResponseCache(__import__("pathlib").Path(__import__("tempfile").mkdtemp()) / "c.sqlite")
    screen(target(SEED), [task()], compressor)
    calls = len(server.requests)
    screen(target(SEED), [task()], compressor)
    assert len(server.requests) == calls


def recency_summarizer(request: dict) -> str:
    """A small model's habit: it follows only what it reads after the conversation."""
    prompt = request["messages"][-1]["content"]
    history, _, after = prompt.partition("<messages>")[2].partition("</messages>")
    keep = [line.strip() for line in history.splitlines() if "identifier" in after and line.strip().startswith("FACT-")]
    return "Summary of the work so far.\n" + "\n".join(dict.fromkeys(keep))


def test_the_loop_places_a_line_after_the_messages_when_that_keeps_more(compressor_for):  # noqa: F811
    compressor, _ = compressor_for(recency_summarizer)
    line = "Keep every identifier and location code the task names."
    record = learn(target, SEED, [task()], [task()], compressor, lambda p, t: line, candidates=1)
    best = record.best()
    assert best.name == "ut1.0c" and best.llm_lines == (line,)
    # Code's lead frames the learned line as an instruction (a bare line was copied back as the summary); the
    # lead is not counted as the optimizer's.
    assert closing_part(best.text) == f"{CLOSING_LEAD}\n{line}" and line not in learned_part(best.text)
    verdicts = {a.candidate: a.verdict for a in record.attempts}
    assert verdicts["ut1.0"] == "dropped: ut1.0c placed better on train"
    # What ran is a template whose last words are the lead and the learned line, after the conversation.
    assert summary_prompt(best.text).format(messages="M").endswith(f"M\n</messages>\n\n{CLOSING_LEAD}\n{line}")


def test_a_second_closing_line_joins_the_first_under_one_lead():
    first = placed(with_contract(SEED), ["Keep every id."], "closing")
    second = placed(first, ["Copy each rule line."], "closing")
    assert closing_part(second) == f"{CLOSING_LEAD}\nKeep every id.\nCopy each rule line."
    assert llm_lines(second, SEED) == ["Keep every id.", "Copy each rule line."]


def test_a_target_without_a_template_gets_no_closing(compressor_for):  # noqa: F811
    compressor, _ = compressor_for(summarizer)

    def compaction(text):
        return AnthropicCompaction(trigger_tokens=1500, instructions=text)

    line = "Keep every identifier and location code the task names."
    record = learn(compaction, SEED, [task()], [task()], compressor, lambda p, t: line, candidates=1)
    assert not any(c.name.endswith("c") for c in record.candidates)


def test_co_keeps_the_closing():
    parent = with_contract("Keep the order of every step, with its ids, and what each step showed.", "Copy ids.")
    proposal = co_step(lambda p, t: "Keep every id.", parent, [], set())
    assert closing_part(proposal.text) == "Copy ids." and learned_part(proposal.text) == "Keep every id."
    assert llm_lines(proposal.text, SEED) == ["Keep every id.", "Copy ids."]


def test_co_refuses_a_made_up_summary_and_a_rewrite_that_stops_protecting_a_kind():
    parent = with_contract("Keep every id a write returned, and every error message word for word.")
    prompts: list[str] = []
    made_up = "PROGRESS:\n- Order 12345 was created.\nERRORS AND WARNINGS: none"
    proposal = co_step(lambda p, t: prompts.append(p) or made_up, parent, [], set())
    assert proposal.llm_lines == () and proposal.refused[-1][1].startswith("reads as a summary")
    assert prompts[0].endswith(SHORTEN_CUE) and '<data source="instructions">' in prompts[0]
    no_errors = co_step(lambda p, t: "Keep every id a write returned.", parent, [], set())
    assert no_errors.llm_lines == () and no_errors.refused[-1][1] == "drops a kind of fact its parent protected (error)"
    shorter = "Keep write ids and errors word for word."
    echoed = co_step(lambda p, t: f"{SHORTEN_CUE}\n{shorter}", parent, [], set())
    assert echoed.llm_lines == (shorter,) and echoed.refused == [(SHORTEN_CUE, "restates the prompt")]


def test_a_kind_word_inside_another_word_does_not_make_a_line_targeted():
    receipt = dataclasses.replace(FACT, kind="receipt", literal="R-1", source="refund R-1 status done")
    vague = "Always provide a valid and complete summary of the work."  # "id" only inside "provide", "valid"
    assert dict(ut_step(lambda p, t: vague, SEED, [receipt]).refused)[vague].startswith("names no kind of fact")
    named = "Always keep the ids that writes returned."
    assert ut_step(lambda p, t: named, SEED, [receipt]).llm_lines == (named,)


def test_the_search_says_each_screen_and_verdict_as_it_goes(compressor_for):  # noqa: F811
    compressor, _ = compressor_for(recency_summarizer)
    said: list[str] = []
    line = "Keep every identifier and location code the task names."
    learn(target, SEED, [task()], [task()], compressor, lambda p, t: line, candidates=1, log=said.append)
    assert said[0].startswith("screened seed+contract: train 0 of ")
    assert "ut1.0 (ut): dropped: ut1.0c placed better on train" in said
    assert any(s.startswith("ut1.0c (ut): chosen") for s in said)
    # each screen is said once, when it runs: the start's validation screen does not repeat its train line
    screens = [s for s in said if s.startswith("screened ")]
    assert screens[1].startswith("screened seed+contract: validation ")
    assert len([s for s in screens if s.startswith("screened seed+contract: train")]) == 1


def test_no_candidate_is_screened_twice_on_the_same_tasks(compressor_for, monkeypatch):  # noqa: F811
    import optimizer.summary.search as search

    compressor, _ = compressor_for(recency_summarizer)
    train, val = [task()], [task()]
    seen: list[tuple[str, int]] = []

    def counting(target, tasks, compressor):
        seen.append((target.instructions, id(tasks)))
        return screen(target, tasks, compressor)

    monkeypatch.setattr(search, "screen", counting)
    line = "Keep every identifier and location code the task names."
    record = learn(target, SEED, train, val, compressor, lambda p, t: line, candidates=1)
    assert record.best().name == "ut1.0c"  # chosen: screened on train for its placement, then on validation
    assert len(seen) == len(set(seen))


def test_a_summary_that_repeats_a_sentence_is_counted_as_looping_and_a_list_of_values_is_not():
    # The 0.5B summarizer's reply on a reach_long train task, shortened: one sentence until the completion cap.
    sentence = "The agent has also sent the gift card to the customer."
    assert repeated(f"PROGRESS: The agent read the skill. {f'{sentence} ' * 5}") == sentence
    listing = "\n".join(f"- order ORD-{i} = {i} units, shipped from the Porto warehouse" for i in range(5))
    assert repeated(listing) == ""
    assert repeated("Done. Done. Done. Done.") == ""  # too short to be a loop of content
    # Lines copied from a result whose every line ends in the same sentence are not the summarizer's loop.
    source = "\n".join(f"E-{i}: refund failed. The finance team reconciles these records weekly." for i in range(3))
    assert repeated(source, source) == ""
    assert repeated(source, "E-0: refund failed. The finance team reconciles these records weekly.") != ""


LOOPING = "The agent has read the order ORD-5521 and will go on with it."


def test_a_looping_summary_gets_a_question_of_its_own_with_its_values_hidden():
    asked = []

    def lm(prompt, temperature):
        asked.append(prompt)
        if "again and again" in prompt:
            return "Keep every identifier a later step needs.\nNever repeat a sentence; write each fact once."
        return "Keep every identifier and location code the task names."

    proposal = ut_step(lm, with_contract(SEED), [FACT], repeats=[LOOPING])
    # The loop first: it crowds out every kind of fact at once. Its sentence is shown with the id hidden.
    assert len(asked) == 2 and "again and again" in asked[0] and "read the order <value>" in asked[0]
    assert "ORD-5521" not in asked[0]
    assert proposal.llm_lines == (
        "Never repeat a sentence; write each fact once.",
        "Keep every identifier and location code the task names.",
    )
    # A line for the loop question must be about repetition, not about another kind.
    assert dict(proposal.refused)["Keep every identifier a later step needs."].startswith("names no kind")


def test_an_answer_to_the_loop_question_in_markdown_bold_with_stop_as_its_verb_is_kept_without_the_markup():
    # the 1.5B optimizer's reply on reach_long train tasks, refused as giving no instruction before
    def lm(prompt, temperature):
        return "**Stop repeating** the same content." if "again and again" in prompt else "Be brief."

    assert ut_step(lm, with_contract(SEED), [], repeats=[LOOPING]).llm_lines == ("Stop repeating the same content.",)


def looping_summarizer(request: dict) -> str:
    """Loops on one sentence unless told, after the conversation, not to repeat; then keeps the facts it read."""
    prompt = request["messages"][-1]["content"]
    history, _, after = prompt.partition("<messages>")[2].partition("</messages>")
    if "repeat" not in after:
        return "Summary.\n" + f"{LOOPING}\n" * 4
    keep = [line.strip() for line in history.splitlines() if line.strip().startswith(("FACT-", "RULE-"))]
    return "Summary of the work so far.\n" + "\n".join(dict.fromkeys(keep))


def test_the_search_learns_a_line_against_a_loop_from_the_loop_itself(compressor_for):  # noqa: F811
    compressor, _ = compressor_for(looping_summarizer)
    line = "Never repeat a sentence; write each fact once."

    def lm(prompt, temperature):
        return line if "again and again" in prompt else "Be brief."

    record = learn(target, SEED, [task()], [task()], compressor, lm, candidates=1)
    start, best = record.candidates[0], record.best()
    assert start.train is not None and start.train.looped > 0 and start.train.repeats[0] == LOOPING
    assert best.llm_lines == (line,) and closing_part(best.text).endswith(line)
    assert best.val is not None and start.val is not None and best.val.kept > start.val.kept
    assert record.to_dict()["candidates"][0]["train"]["summaries_looped"] == start.train.looped


CLAIM = "The agent has called finish with the answer for order ORD-5521."
AGAINST_CLAIMS = "Never report a step as done unless its result appears in the conversation."


def adding(line: str, *, unless: str):
    """A summarizer that keeps what `summarizer` keeps and adds `line`, unless its instructions say `unless`."""

    def summarize(request: dict) -> str:
        kept = summarizer(request)
        return kept if unless in request["messages"][-1]["content"] else f"{kept}\n{line}"

    return summarize


claiming_summarizer = adding(CLAIM, unless="unless its result")  # says the task is finished


def test_the_screen_counts_a_summary_that_says_a_step_not_yet_taken_is_done(compressor_for):  # noqa: F811
    compressor, _ = compressor_for(claiming_summarizer)
    claimed = screen(target(SEED), [task()], compressor)
    assert claimed.claimed == len(claimed.summaries) > 0 and claimed.claims[0] == CLAIM
    honest = screen(target(f"{SEED}\n{AGAINST_CLAIMS}"), [task()], compressor)
    assert honest.claimed == 0 and honest.claims == []


def test_a_false_claim_gets_a_question_of_its_own_with_values_and_tools_hidden():
    asked = []

    def lm(prompt, temperature):
        asked.append(prompt)
        if "had not done that step" in prompt:
            return "Never mention send_gift_card.\nKeep every identifier a later step needs.\n" + AGAINST_CLAIMS
        return "Keep every identifier and location code the task names."

    claim = "The agent has called send_gift_card for CUS-0042."
    proposal = ut_step(lm, with_contract(SEED), [FACT], claims=[claim])
    assert len(asked) == 2 and "called <tool> for <value>" in asked[0]
    assert "send_gift_card" not in asked[0] and "CUS-0042" not in asked[0]
    assert proposal.llm_lines == (AGAINST_CLAIMS, "Keep every identifier and location code the task names.")
    refused = dict(proposal.refused)
    assert refused["Never mention send_gift_card."] == "names a value or id from the examples"
    assert refused["Keep every identifier a later step needs."].startswith("names no kind")


INVENTED = "VARIABLES: widget = W-778, bin = B-97, price = 12.50"
AGAINST_INVENTING = "Write a value only exactly as a message showed it; never guess one."


inventing_summarizer = adding(INVENTED, unless="never guess")  # a bin and a price no message held


def test_the_screen_counts_a_summary_that_states_values_no_message_held(compressor_for):  # noqa: F811
    compressor, _ = compressor_for(inventing_summarizer)
    made_up = screen(target(SEED), [task()], compressor)
    assert made_up.inventing == len(made_up.summaries) > 0 and made_up.invented_lines[0] == INVENTED
    assert made_up.summaries[0].invented == ("B-97", "12.50")  # the widget is the task statement's own
    assert made_up.misleading == made_up.inventing and made_up.claimed == 0
    honest = screen(target(f"{SEED}\n{AGAINST_INVENTING}"), [task()], compressor)
    assert honest.inventing == 0 and honest.invented_lines == []


def test_an_invented_value_gets_a_question_of_its_own_with_values_hidden():
    asked = []

    def lm(prompt, temperature):
        asked.append(prompt)
        if "made them up" in prompt:
            return "Never write B-97.\nKeep the answer short and clear.\n" + AGAINST_INVENTING
        return "Keep every identifier and location code the task names."

    proposal = ut_step(lm, with_contract(SEED), [FACT], invented=[INVENTED])
    assert len(asked) == 2 and "bin = <value>, price = <value>" in asked[0]
    assert "B-97" not in asked[0] and "12.50" not in asked[0]
    assert proposal.llm_lines == (AGAINST_INVENTING, "Keep every identifier and location code the task names.")
    refused = dict(proposal.refused)
    assert refused["Never write B-97."] == "names a value or id from the examples"
    assert refused["Keep the answer short and clear."].startswith("names no kind")


@pytest.mark.parametrize(
    "line",
    [
        "The summarizer should refrain from generating values not present in the original input.",
        # refused as naming no kind of lost fact in the four-proposal run on reach_long train tasks
        "The summarizer must refrain from writing values that were not input to it.",
    ],
)
def test_the_1_5b_optimizers_answers_to_the_invented_value_question_are_kept(line):
    def lm(prompt, temperature):
        return line if "made them up" in prompt else "Be brief."

    assert ut_step(lm, with_contract(SEED), [], invented=[INVENTED]).llm_lines == (line,)


def test_a_child_that_cures_one_of_two_faults_of_its_summaries_ranks_above_its_parent():
    def screened(claims: bool, invented: bool) -> ScreenResult:
        claim = ("The agent has called finish.",) if claims else ()
        score = SummaryScore("t", 0, 2, 2, 50, claims=claim, invented=("B-97",) if invented else ())
        return ScreenResult((TaskScreen("t", (score,), 3, 3, 900),))

    parent = screened(claims=True, invented=True)
    assert parent.misleading == 2 and rank(screened(claims=False, invented=True)) > rank(parent)
    assert rank(screened(claims=False, invented=False)) > rank(screened(claims=True, invented=False))


@pytest.mark.parametrize(
    ("faulty", "question", "cure", "count", "column"),
    [
        (claiming_summarizer, "had not done that step", AGAINST_CLAIMS, "claimed", "summaries_claiming"),
        (inventing_summarizer, "made them up", AGAINST_INVENTING, "inventing", "summaries_inventing"),
    ],
)
def test_the_search_learns_a_line_against_a_misleading_fault_at_equal_facts(
    compressor_for,  # noqa: F811
    faulty,
    question,
    cure,
    count,
    column,
):
    compressor, _ = compressor_for(faulty)

    def lm(prompt, temperature):
        return cure if question in prompt else "Be brief."

    record = learn(target, SEED, [task()], [task()], compressor, lm, candidates=1)
    start, best = record.candidates[0], record.best()
    assert start.train is not None and getattr(start.train, count) > 0
    assert best.llm_lines == (cure,) and best.val is not None and getattr(best.val, count) == 0
    assert start.val is not None and best.val.kept == start.val.kept  # chosen on the fault alone
    assert record.to_dict()["candidates"][0]["train"][column] == getattr(start.train, count)


PLAN_AGAIN = f"- {TASK}"
AGAINST_RESTATING = "State what each tool call returned instead of repeating the task's steps."


def restating_summarizer(request: dict) -> str:
    """The task statement again, unless told to say what the calls returned; then the facts the results held."""
    prompt = str(request["messages"][-1]["content"])
    if AGAINST_RESTATING not in prompt:
        return PLAN_AGAIN
    _, _, history = prompt.partition("<messages>")
    facts = dict.fromkeys(line.strip() for line in history.splitlines() if line.strip().startswith("FACT-"))
    return "\n".join(["The calls returned:", *facts])


def test_the_screen_counts_a_summary_that_is_the_task_again(compressor_for):  # noqa: F811
    compressor, _ = compressor_for(restating_summarizer)
    again = screen(target(SEED), [task()], compressor)
    assert again.restating == len(again.summaries) > 0 and again.restated_lines[0] == TASK
    assert again.kept == 0 and again.misleading == 0  # a loss, counted as facts lost, not as a misleading fault
    cured = screen(target(f"{SEED}\n{AGAINST_RESTATING}"), [task()], compressor)
    assert cured.restating == 0 and cured.kept > 0


def test_a_restated_task_gets_a_question_of_its_own_with_values_and_tools_hidden():
    asked = []

    def lm(prompt, temperature):
        asked.append(prompt)
        return "Instruction for the summarizer: " + AGAINST_RESTATING + "\nKeep every line: call read_skill with it."

    plan = ["Call read_skill with the 'ordering' skill.", "Call get_stock for W-778.", "Reserve 12 units of W-778."]
    proposal = ut_step(lm, with_contract(SEED), [], restated=plan)
    assert len(asked) == 1 and "- Call <tool> for <value>." in asked[0] and "starts the task over" in asked[0]
    assert asked[0].endswith("\n\nInstruction for the summarizer:")  # where the small optimizer starts instructing
    assert "read_skill" not in asked[0] and "W-778" not in asked[0]
    assert proposal.llm_lines == (AGAINST_RESTATING,)
    assert dict(proposal.refused)["Keep every line: call read_skill with it."] == (
        "names a value or id from the examples"
    )


def test_the_search_learns_a_line_against_a_restated_task_when_it_keeps_the_results(compressor_for):  # noqa: F811
    compressor, _ = compressor_for(restating_summarizer)

    def lm(prompt, temperature):
        return AGAINST_RESTATING if "starts the task over" in prompt else "Be brief."

    record = learn(target, SEED, [task()], [task()], compressor, lm, candidates=1)
    start, best = record.candidates[0], record.best()
    assert start.train is not None and start.train.restating > 0
    assert best.llm_lines == (AGAINST_RESTATING,) and best.val is not None and best.val.restating == 0
    assert record.to_dict()["candidates"][0]["train"]["summaries_restating"] == start.train.restating


def _screened(kept: int, claims: int) -> ScreenResult:
    summaries = tuple(
        SummaryScore(
            "t", i, 2, kept if i == 0 else 2, 50, claims=("The agent has called finish.",) if i < claims else ()
        )
        for i in range(2)
    )
    return ScreenResult((TaskScreen("t", summaries, 3, 3, 900),))


def test_a_child_better_on_train_is_taken_at_a_tie_on_validation_and_never_when_worse():
    parent = _screened(kept=2, claims=0)
    assert _ut_verdict(_screened(kept=2, claims=0), parent) == "chosen: better on train, equal on validation"
    assert _ut_verdict(_screened(kept=2, claims=1), parent).startswith("dropped")
    assert _ut_verdict(_screened(kept=1, claims=0), parent).startswith("dropped")
    assert _ut_verdict(parent, _screened(kept=2, claims=2)) == "chosen: better on validation"


def test_a_child_the_screen_takes_is_dropped_when_the_real_agent_does_worse_with_it(compressor_for):  # noqa: F811
    compressor, _ = compressor_for(claiming_summarizer)

    def lm(prompt, temperature):
        return AGAINST_CLAIMS if "had not done that step" in prompt else "Be brief."

    asked: list[str] = []

    def confirm(text: str) -> float:
        asked.append(text)
        return 0.5 if AGAINST_CLAIMS in text else 1.0

    record = learn(target, SEED, [task()], [task()], compressor, lm, candidates=1, confirm=confirm)
    verdicts = {a.candidate: a.verdict for a in record.attempts}
    assert verdicts["ut1.0"] == "dropped: worse than its parent at tier 1 (tier 1 0.50 against 1.00)"
    assert record.best().name == "seed+contract" and len(asked) == len(set(asked))  # each text run once
    assert record.to_dict()["candidates"][0]["tier1_val"] == 1.0

    kept = learn(target, SEED, [task()], [task()], compressor, lm, candidates=1, confirm=lambda text: 1.0)
    assert kept.best().llm_lines == (AGAINST_CLAIMS,)
    assert {a.candidate: a.verdict for a in kept.attempts}["ut1.0"].endswith("; tier 1 1.00 against 1.00")


def test_summaries_at_consecutive_steps_are_counted_and_said_to_be_the_knobs_doing(compressor_for):  # noqa: F811
    compressor, _ = compressor_for(summarizer)
    # The workbench's results are large: four kept messages already reach a 1,500-token trigger after a summary.
    churning = screen(LangChainSummary(trigger_tokens=1500, keep_messages=4, instructions=SEED), [task()], compressor)
    steps = [s.step for s in churning.summaries]
    assert churning.back_to_back == sum(b == a + 1 for a, b in pairwise(steps)) > 0
    settled = screen(LangChainSummary(trigger_tokens=2500, keep_messages=4, instructions=SEED), [task()], compressor)
    assert settled.summaries and settled.back_to_back == 0
    said: list[str] = []
    record = learn(
        target, SEED, [task()], [task()], compressor, lambda p, t: "Be brief.", candidates=1, log=said.append
    )
    assert record.to_dict()["candidates"][0]["train"]["summaries_back_to_back"] > 0
    assert sum("summarizes on every call" in line for line in said) == 1


def picky_summarizer(request: dict) -> str:
    """Ids when asked for identifiers; rules only when told to copy them (the contract alone does not do it)."""
    instructions, _, history = request["messages"][-1]["content"].partition("<messages>")
    lines = [line.strip() for line in history.splitlines()]
    keep = [line for line in lines if "identifier" in instructions and line.startswith("FACT-")]
    keep += [line for line in lines if "Copy every rule" in instructions and line.startswith("RULE-")]
    return "Summary of the work so far.\n" + "\n".join(dict.fromkeys(keep))


def test_the_search_goes_on_from_the_start_that_keeps_more_and_counts_only_its_own_lines_as_learned(
    compressor_for,  # noqa: F811
):
    compressor, _ = compressor_for(picky_summarizer)
    layout = "List every identifier first.\nThen say what is done."
    line = "Copy every rule verbatim, word for word, with its code."
    said: list[str] = []
    record = learn(
        target,
        SEED,
        [task()],
        [task()],
        compressor,
        lambda p, t: line,
        candidates=1,
        starts={"ids": layout},
        log=said.append,
    )
    assert record.start == "ids+contract" and record.to_dict()["start"] == "ids+contract"
    starts = {c.name: c for c in record.candidates if c.parent is None}
    assert set(starts) == {"seed+contract", "ids+contract"}
    # Only the start goes on to validation.
    assert starts["ids+contract"].val is not None and starts["seed+contract"].val is None
    assert "starting from ids+contract: seed+contract 0 of 5 train facts kept" in "\n".join(said)
    best = record.best()
    assert best.parent == "ids+contract" and learned_part(best.text).startswith(layout)
    # The layout's lines are acon's, not the optimizer's.
    assert best.llm_lines == (line,)


def test_the_seed_stays_the_start_when_another_layout_keeps_no_more(compressor_for):  # noqa: F811
    compressor, _ = compressor_for(picky_summarizer)
    plain = "Say what happened, briefly."
    record = learn(target, SEED, [task()], [task()], compressor, lambda p, t: "", candidates=1, starts={"plain": plain})
    assert record.start == "seed+contract" and record.seed.val is not None


def test_the_written_layouts_start_only_a_search_from_acons_seed():
    from optimizer.context.guideline import SEED_GUIDELINE, read_guideline
    from optimizer.summary.layouts import STARTS, starts_for

    assert starts_for(read_guideline(SEED_GUIDELINE).history) == STARTS
    assert starts_for("Summarize what my agent did.") == {}


def test_a_stock_count_rewritten_as_name_equals_value_is_kept(compressor_for):  # noqa: F811
    """`reach_long` names a stock count by its JSON key; a summary in the facts-first layout writes it
    `units_in_stock = 17`, which still shows the count under its key."""
    import json
    import re

    from tasks.reach_long import build_task

    def rewrite_pairs(request: dict) -> str:
        history = request["messages"][-1]["content"]
        pairs = [f"- {k} = {v}" for k, v in re.findall(r'"(\w+)": (-?\d+)', history)]
        return "VARIABLES:\n" + "\n".join(dict.fromkeys(pairs)) + "\nPROGRESS: " + json.dumps("stock read")

    def drop_everything(request: dict) -> str:
        return "PROGRESS: " + json.dumps("stock read")

    def stock_lost(summarize) -> list[str]:
        compressor, _ = compressor_for(summarize)
        target = LangChainSummary(trigger_tokens=2000, keep_messages=4, instructions=SEED)
        result = screen(target, [build_task("restock", 0)], compressor)
        return [f.literal for f in result.lost if "units_in_stock" in f.literal]

    assert stock_lost(drop_everything)  # a summary folds the stock read, and a later step needs it
    assert stock_lost(rewrite_pairs) == []


def test_several_compressors_screen_each_task_once_per_draw_and_pool_it(compressor_for):  # noqa: F811
    keeping, _ = compressor_for(summarizer)
    forgetting, _ = compressor_for(lambda request: "Summary of the work so far.")
    text = target(with_contract("Keep every identifier."))
    kept, lost = screen(text, [task()], keeping), screen(text, [task()], forgetting)
    assert kept.kept > 0 and lost.kept == 0
    both = screen(text, [task()], [keeping, forgetting])
    assert len(both.tasks) == 2 and (both.kept, both.needed) == (kept.kept, kept.needed + lost.needed)
    # one task, pooled over its draws: a pair stays one task
    assert both.kept_by_task() == {task().id: kept.kept / (kept.needed + lost.needed)}
    with pytest.raises(ValueError, match="at least one compressor"):
        screen(text, [task()], [])


def section_summarizer(request: dict) -> str:
    """A small model's habit: it writes what its sections name, and no sentence changes that."""
    instructions, _, history = request["messages"][-1]["content"].partition("<messages>")
    heads = {line.split(":")[0] for line in instructions.splitlines() if re.match(r"^[A-Z]{2,}:", line)}
    keep = [
        line.strip()
        for line in history.splitlines()
        if (line.strip().startswith("FACT-") and "VALUES" in heads)
        or (line.strip().startswith("RULE-") and "RULES" in heads)
    ]
    return "Summary of the work so far.\n" + "\n".join(dict.fromkeys(keep))


def test_with_sections_the_search_adds_a_section_for_a_lost_kind_its_layout_lacks(compressor_for):  # noqa: F811
    compressor, _ = compressor_for(section_summarizer)
    layout = "Use these sections:\nVALUES: every identifier the task names.\nPROGRESS: one line: what is done."
    section = "RULES: each rule line the agent read, its rules verbatim."
    record = learn(target, layout, [task()], [task()], compressor, lambda p, t: section, candidates=1, sections=True)
    best = record.best()
    assert best.name == "sec1" and best.llm_lines == (section,)
    assert learned_part(best.text).splitlines()[-2:] == [section, "PROGRESS: one line: what is done."]
    assert best.val is not None and best.val.kept_share == 1.0
    without = learn(target, layout, [task()], [task()], compressor, lambda p, t: section, candidates=1)
    assert not any(c.name.startswith("sec") for c in without.candidates)
