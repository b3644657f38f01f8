"""The paraphrase move: one sentence said otherwise, checked to be the same instruction, and judged by a paired gain.

The scripted summarizer here follows wording, as the 0.5B model does: it copies the task's FACT lines only when
the instructions tell it to "copy" identifiers, and "note" them is not enough.
"""

from __future__ import annotations

import pytest

from optimizer.summary.contract_text import learned_part, with_contract
from optimizer.summary.langchain_target import LangChainSummary
from optimizer.summary.layouts import FACTS_FIRST
from optimizer.summary.paraphrase import order, paraphrase_step, refusal
from optimizer.summary.rewrite import llm_lines
from optimizer.summary.search import learn
from optimizer.summary.sentences import normal, replaced, sentences, spans
from tests.context.conftest import compressor_for  # noqa: F401 - fixture
from tests.summary.test_screen_and_search import task

SEED = "You condense an agent's earlier steps.\nNote every identifier the task\nnames in the summary."
NOTED = "Note every identifier the task names in the summary."
COPIED = "Copy every identifier the task names into the summary."


def wording_summarizer(request: dict) -> str:
    prompt = request["messages"][-1]["content"]
    instructions, _, history = prompt.partition("<messages>")
    lines = [line.strip() for line in history.splitlines()]
    keep = [line for line in lines if line.startswith("RULE-") and "rules verbatim" in instructions]
    if "Copy every identifier" in instructions:
        keep += [line for line in lines if line.startswith("FACT-")]
    return "Summary of the work so far.\n" + "\n".join(dict.fromkeys(keep))


def target(text):
    return LangChainSummary(trigger_tokens=1500, keep_messages=4, instructions=text)


def test_a_wrapped_sentence_is_one_sentence():
    assert sentences(SEED) == ["You condense an agent's earlier steps.", NOTED]
    start, end = spans(SEED)[1]
    assert replaced(SEED, (start, end), COPIED) == f"You condense an agent's earlier steps.\n{COPIED}"


def test_section_lines_and_bullets_are_sentences_of_their_own():
    found = sentences(FACTS_FIRST)
    assert "Use exactly these sections, in this order, as bullet points:" in found
    assert "PROGRESS: one line: what is done and the next step." in found
    assert sentences("- **Keep ids.**\n- Copy `rules` verbatim") == ["Keep ids.", "Copy `rules` verbatim"]
    assert normal("  `Keep\n   ids.`  ") == "Keep ids."


def test_the_sentence_protecting_the_most_lost_facts_comes_first():
    text = learned_part(with_contract(FACTS_FIRST))
    first = text[slice(*order(text, {"value": 5, "error": 1})[0])]
    assert normal(first).startswith("VARIABLES:")
    by_error = text[slice(*order(text, {"error": 3})[0])]
    assert normal(by_error).startswith("ERRORS AND WARNINGS:")
    assert [text[a:b] for a, b in order(text, {})] == [text[a:b] for a, b in spans(text)]


@pytest.mark.parametrize(
    ("new", "reason"),
    [
        (NOTED, "the sentence as it was"),
        ("Note every identifier, such as A-12, the task names.", "names a value or number"),
        ("Note the 3 identifiers the task names in the summary.", "names a value or number"),
        ("Never note any identifier the task names.", "turns a prohibition into an instruction, or one into the other"),
        ("Note every rule the task gives in the summary.", "drops a kind of fact the sentence protected (value)"),
        ("Note identifier.", "cuts the sentence to under half (2 words for 9)"),
        (" ".join(["Note every identifier the task names"] * 5), "adds to the sentence (30 words for 9)"),
    ],
)
def test_a_reply_that_is_not_the_same_instruction_is_refused(new, reason):
    assert (refusal(new, NOTED, [NOTED]) or "").startswith(reason)


def test_a_version_may_change_at_most_three_words():
    from optimizer.summary.paraphrase import words_changed

    assert words_changed("Copy every identifier the task names into the summary.", NOTED) == 2
    free = "Please list all identifiers that the task names for the summary."
    assert words_changed(free, NOTED) == 6 and refusal(free, NOTED, []) == "changes 6 words (at most 3)"
    cased = "Note every identifier, the task names, in the Summary."
    assert refusal(cased, NOTED, []) == "changes no word (case or punctuation only)"


def test_a_section_name_must_stay_as_written():
    old = "DONE: writes that already happened, each with its id."
    assert refusal("COMPLETED: writes that already happened, each with its id.", old, []) == "changes a section name"
    assert refusal("DONE: writes already made, each one with its id.", old, []) is None


def test_the_step_replaces_one_sentence_and_credits_only_that_sentence():
    prompts = []
    parent = with_contract(SEED)
    reply = f'Three versions:\n1. {NOTED}\n2. "{COPIED}"\n3. Keep the identifiers.'
    proposal = paraphrase_step(lambda p, t: prompts.append(p) or reply, parent, {"value": 2})
    assert proposal.llm_lines == (COPIED,) and proposal.replaces == NOTED
    # The first rewording that passes is taken; the echo before it is refused with its reason.
    assert proposal.refused == [(NOTED, "the sentence as it was")]
    assert learned_part(proposal.text) == f"You condense an agent's earlier steps.\n{COPIED}"
    # Only the new sentence is the optimizer's; the sentence beside it on the same lines is the seed's.
    assert llm_lines(proposal.text, SEED) == [COPIED]
    # The optimizer is shown what was lost by kind, never a value, and the sentence it is to rewrite.
    assert "an identifier or value a later step needs" in prompts[0] and NOTED in prompts[0]


def test_a_refused_reply_leaves_the_text_as_it_was():
    parent = with_contract(SEED)
    proposal = paraphrase_step(lambda p, t: NOTED, parent, {"value": 1})
    assert proposal.text == parent and proposal.llm_lines == ()
    assert proposal.refused == [(NOTED, "the sentence as it was")]


def test_the_loop_takes_a_paraphrase_that_keeps_more(compressor_for):  # noqa: F811
    compressor, _ = compressor_for(wording_summarizer)
    replies = {"Three versions:": COPIED}

    def lm(prompt: str, temperature: float) -> str:
        return next((r for cue, r in replies.items() if prompt.endswith(cue)), "Summarize.")

    record = learn(target, SEED, [task()], [task()], compressor, lm, candidates=0, paraphrases=1)
    best = record.best()
    assert best.name == "pp1.0" and best.llm_lines == (COPIED,)
    assert best.train is not None and record.seed.train is not None
    assert best.train.kept > record.seed.train.kept
    verdict = next(a.verdict for a in record.attempts if a.candidate == "pp1.0")
    assert verdict.startswith("chosen") and "train +" in verdict
    data = record.to_dict()["attempts"][0]
    assert data["step"] == "paraphrase" and data["replaces"] == NOTED


def test_a_paraphrase_that_keeps_no_more_is_dropped(compressor_for):  # noqa: F811
    compressor, _ = compressor_for(wording_summarizer)
    other = "Write down every identifier the task names in the summary."

    def lm(prompt: str, temperature: float) -> str:
        return other if prompt.endswith("Three versions:") else "Summarize."

    record = learn(target, SEED, [task()], [task()], compressor, lm, candidates=0, paraphrases=1)
    assert record.best().name == "seed+contract"
    verdict = next(a.verdict for a in record.attempts if a.candidate == "pp1.0")
    assert verdict.startswith("dropped: not clearly better than its parent on train (+0.00")
    assert record.named("pp1.0").val is None  # never screened on validation


def test_a_section_name_is_kept_by_code_and_never_shown_for_rewording():
    parent = with_contract("VARIABLES: every identifier the task names, as written.\nDrop the rest.")
    prompts = []
    reply = "each identifier that the task names, exactly as written"
    proposal = paraphrase_step(lambda p, t: prompts.append(p) or reply, parent, {"value": 1})
    assert proposal.llm_lines == ("VARIABLES: each identifier that the task names, exactly as written",)
    assert learned_part(proposal.text).startswith("VARIABLES: each identifier that the task names")
    shown = prompts[0].split('<data source="sentence">')[1]
    assert "VARIABLES" not in shown and "every identifier the task names" in shown


def test_the_optimizer_is_told_which_words_the_checks_read():
    from optimizer.summary.paraphrase import anchors

    done = "writes that already happened, each with its id, so that none is repeated."
    assert anchors(done) == ["writes", "id", "none"]
    assert anchors("every identifier and value, ids and page numbers.") == [
        "identifier",
        "value",
        "ids",
        "page",
        "numbers",
    ]
    prompts = []
    paraphrase_step(lambda p, t: prompts.append(p) or "", with_contract(f"DONE: {done}"), {"receipt": 1})
    assert "# keep\nwrites, id, none" in prompts[0]
