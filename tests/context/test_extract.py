"""Executable extraction: units, rules, mentions, rendering, the `extract` moves and the `oracle`."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from optimizer.context.extraction import (
    ExtractRule,
    Selection,
    Terms,
    parse_units,
    render,
    request_terms,
    select,
)
from optimizer.context.guideline import SEED_GUIDELINE, RetentionPolicy, read_guideline
from optimizer.context.history import EntryKind, History
from optimizer.context.strategies import GuidelineStrategy, parse_strategy
from optimizer.world.tool import ToolCall
from tests.context.conftest import (
    CATALOG,
    ERROR_LINE,
    PAGE_WARNING,
    PROTECTED,
    STANDARD,
    Scripted,
    assert_contract,
    ok,
    run,
)

ORDER = "\n".join(
    [
        "order ORD-66682  placed 2024-04-29  status: delivered",
        "customer: CUS-96928 (Tomasz Weber)",
        "--- line items (4) ---",
        "LN-273754 | Nordvik kettle 1.0L, sand | unit EUR 29.12",
        "LN-915147 | Verano desk lamp medium, brushed steel | unit EUR 47.58",
        "LN-903308 | Halden desk lamp small, slate blue | unit EUR 145.04",
        "LN-361330 | Halden headphones over-ear, forest green | unit EUR 306.47",
    ]
)
NO_MENTIONS = Selection(mention_task=False, mention_calls=False, head=0)


def history_with(task: str, *calls: ToolCall) -> History:
    history = History()
    history.append(EntryKind.TASK, task, step=0, turn=0)
    for i, call in enumerate(calls):
        history.append(EntryKind.ACTION, "", step=i, turn=0, calls=(call,))
    return history


def kept(content: str, selection: Selection, terms: Terms | None = None, tool: str | None = None) -> str:
    parsed = parse_units(content)
    return render(parsed, select(parsed, selection, tool=tool, terms=terms))


def test_lines_matching_a_rule_are_kept_in_order():
    rule = ExtractRule(pattern=r"^LN-\d+ \|.*EUR 1\d\d\.")
    assert kept(ORDER, NO_MENTIONS.model_copy(update={"rules": (rule,)})) == ORDER.splitlines()[5]
    head = NO_MENTIONS.model_copy(update={"rules": (rule,), "head": 2, "tail": 1})
    assert kept(ORDER, head).splitlines() == [*ORDER.splitlines()[:2], *ORDER.splitlines()[5:7]]


def test_a_rule_scoped_to_another_tool_does_not_apply():
    rule = ExtractRule(pattern="Halden", tool="get_catalog")
    assert kept(ORDER, NO_MENTIONS.model_copy(update={"rules": (rule,)}), tool="get_order") == ""
    assert "Halden" in kept(ORDER, NO_MENTIONS.model_copy(update={"rules": (rule,)}), tool="get_catalog")


def test_mentions_of_the_request_pick_the_line_the_user_described():
    history = history_with(
        "The Halden desk lamp small, slate blue from order ORD-66682 arrived broken; refund it.",
        ToolCall("c1", "get_order", {"order_id": "ORD-66682"}),
    )
    terms = request_terms(history.entries)
    assert "66682" in terms.strong and "ORD-66682" in terms.literals and "halden" in terms.words
    text = kept(ORDER, Selection(head=0, min_words=4), terms)
    assert text.splitlines() == [ORDER.splitlines()[0], ORDER.splitlines()[5]]
    # With a relative bar only the best-matching line of the listing stays.
    assert kept(ORDER, Selection(head=0, min_words=1, top_ratio=0.9), terms).splitlines()[-1].startswith("LN-903308")


def test_a_term_most_units_share_stops_counting_as_a_mention():
    events = "\n".join(f"2024-04-{day:02d} 09:00  ORD-66682 parcel scanned at hub" for day in range(1, 10))
    tracked = "2024-04-10 11:30  ORD-66682 outbound parcel tracking 1Z999AA10123456784"
    history = history_with(
        "Quote the outbound tracking number of order ORD-66682 from April 2024.",
        ToolCall("c1", "get_order", {"order_id": "ORD-66682"}),
    )
    terms = request_terms(history.entries)
    content = f"{events}\n{tracked}"
    # The year and the order id are on every line, so by default every line mentions the request.
    assert len(kept(content, Selection(head=0), terms).splitlines()) == 10
    assert kept(content, Selection(head=0, max_term_share=0.5, min_words=2), terms) == tracked
    # Off by default, and left out of the dump while off, so older guidelines keep their versions.
    assert "max_term_share" not in Selection().model_dump()
    assert Selection(max_term_share=0.5).model_dump()["max_term_share"] == 0.5
    with pytest.raises(ValidationError):
        Selection(max_term_share=0.0)


def test_a_term_found_in_one_unit_counts_however_short_the_result():
    history = history_with("Quote the outbound tracking number of order ORD-66682.")
    terms = request_terms(history.entries)
    short = "order ORD-66682 shipped\ncarrier DHL\nservice express"
    # 1 of 3 units is above a 0.12 share of them, but a term in a single unit still tells it apart.
    assert kept(short, Selection(head=0, max_term_share=0.12, max_word_share=0.12), terms) == "order ORD-66682 shipped"


def test_a_word_every_row_shares_stops_counting_toward_a_mention():
    rows = [f"2024-0{m}-1{m} | CHG-10{m}0 | ORD-20{m}0 | card charge | EUR 1{m}.00" for m in range(1, 9)]
    rows.append("2024-04-22 | CHG-7001 | ORD-53213 | card charge, captured twice | EUR 24.52")
    statement = "\n".join(rows)
    history = history_with("Customer was charged twice on their card: find the duplicate card charge and refund it.")
    terms = request_terms(history.entries)
    # "card" and "charge" are on every row: with the default, each row has enough of the user's words.
    assert len(kept(statement, Selection(head=0, min_words=2), terms).splitlines()) == 9
    assert kept(statement, Selection(head=0, min_words=1, max_word_share=0.5), terms) == rows[-1]
    assert "max_word_share" not in Selection().model_dump()
    assert Selection(max_word_share=0.25).model_dump()["max_word_share"] == 0.25


def test_quoted_phrases_and_call_arguments_are_strong_terms():
    history = history_with("Find files with 'test' in their name.", ToolCall("c1", "cd", {"folder": "projects"}))
    terms = request_terms(history.entries)
    listing = json.dumps({"matches": ["./projects/a.txt", "./projects/test_image1.jpg", "./docs/b.md"]})
    assert kept(listing, Selection(head=0), terms) == json.dumps(
        {"matches": ["./projects/a.txt", "./projects/test_image1.jpg"]}
    )


def test_json_results_keep_structure_and_split_long_strings_into_lines():
    content = json.dumps({"file_content": "\n".join(f"row {i}: value {i * 7}" for i in range(40)), "owner": "alice"})
    rule = ExtractRule(pattern=r"^row 1\d:", field="file_content")
    out = json.loads(kept(content, NO_MENTIONS.model_copy(update={"rules": (rule,)})))
    assert out == {"file_content": "\n".join(f"row {i}: value {i * 7}" for i in range(10, 20))}
    nested = json.dumps({"tickets": [{"id": 4201, "status": "open"}, {"id": 4202, "status": "closed"}]})
    terms = Terms(frozenset({"4202"}), frozenset(), frozenset())
    assert json.loads(kept(nested, Selection(head=0), terms)) == {"tickets": [{"id": 4202}]}


@pytest.mark.parametrize(
    "rule",
    [
        {"pattern": "(a)\\1"},  # a backreference: not linear time, RE2 refuses it
        {"pattern": ""},
        {"pattern": "x" * 201},
        {"pattern": "ok", "scope": "get_order"},
    ],
)
def test_invalid_rules_are_rejected(rule):
    with pytest.raises(ValidationError):
        ExtractRule.model_validate(rule)


def test_rule_count_is_bounded():
    with pytest.raises(ValidationError):
        Selection(rules=tuple(ExtractRule(pattern=f"r{i}") for i in range(25)))


def test_a_pathological_pattern_runs_in_linear_time():
    import time

    rule = ExtractRule(pattern="(x+x+)+y")  # catastrophic backtracking in Python's `re`
    started = time.perf_counter()
    assert kept("x" * 5000, NO_MENTIONS.model_copy(update={"rules": (rule,)})) == ""
    assert time.perf_counter() - started < 1.0


def extract_guideline(**select_options) -> GuidelineStrategy:
    seed = read_guideline(SEED_GUIDELINE)
    extract = {"move": "extract", "classes": ["static"], "over": 500, "select": select_options}
    policy = RetentionPolicy.model_validate({"write": [extract]})
    return GuidelineStrategy(guideline=seed.model_copy(update={"policy": policy, "name": "extract"}))


def test_the_extract_move_keeps_selected_lines_and_names_the_handle():
    strategy = extract_guideline(rules=[{"pattern": "FACT-STATIC-"}], head=1)
    assert strategy.offers_recall and not strategy.uses_compressor
    result = run(strategy)
    written = result.episode.text(next(e.text for e in result.episode.entries if e.id == 4))
    assert written.splitlines()[0].startswith(
        '[extracted 2 of 61 parts: result of read_file({"path": "docs/catalog.md"}) call_id=ref_2, 1097 tokens; '
        'full result: recall(handle="h1")]'
    )
    assert written.splitlines()[1:] == [CATALOG.splitlines()[0], "FACT-STATIC-77: widget W-778 ships from bin B-14."]
    record = result.episode.records[0]
    assert (record.action, record.tokens_before, record.handles) == ("extract", 1097, ("h1",))
    assert result.visible_at_end("FACT-STATIC-77")
    assert all(result.visible_at_end(literal) for literal in PROTECTED)
    assert_contract(result)


def test_must_keep_lines_survive_an_extraction_that_selects_nothing():
    script = (
        Scripted(
            "search",
            {"query": "widget"},
            ok("\n".join([PAGE_WARNING, *(f"hit {i}" for i in range(300))]), PAGE_WARNING),
        ),
        *STANDARD[3:5],
    )
    seed = read_guideline(SEED_GUIDELINE)
    policy = RetentionPolicy.model_validate(
        {
            "write": [
                {"move": "extract", "over": 100, "select": {"head": 0, "mention_task": False, "mention_calls": False}}
            ]
        }
    )
    strategy = GuidelineStrategy(guideline=seed.model_copy(update={"policy": policy}))
    result = run(strategy, script)
    assert result.visible_at_end(PAGE_WARNING) and result.visible_at_end(ERROR_LINE)
    assert not result.visible_at_end("hit 150")
    assert_contract(result)


def test_extract_old_cuts_results_once_they_are_old():
    seed = read_guideline(SEED_GUIDELINE)
    policy = RetentionPolicy.model_validate(
        {
            "history": [
                {
                    "move": "extract_old",
                    "keep_last": 2,
                    "over": 300,
                    "select": {"head": 0, "rules": [{"pattern": "FACT-"}]},
                }
            ]
        }
    )
    result = run(GuidelineStrategy(guideline=seed.model_copy(update={"policy": policy})))
    first = next(r for r in result.episode.records if r.action == "extract")
    assert first.stage == "replay" and 4 in first.entry_ids and first.step == 4  # step 1 is old from 4 on
    assert result.visible_at_end("FACT-STATIC-77")
    assert not result.visible_at_end("catalog note 40:")
    assert_contract(result)


def test_the_oracle_keeps_exactly_what_the_reference_needs():
    from optimizer.world import Need, NeedKind

    need = Need(NeedKind.VALUE, "B-14", argument="bin", guess="B-15")
    script = (*STANDARD[:2], Scripted("get_stock", {"sku": "W-778", "bin": "B-14"}, ok("sku: W-778"), (need,)))
    oracle = parse_strategy("oracle")
    assert oracle.kind == "oracle" and not oracle.offers_recall
    result = run(oracle, script)
    assert result.episode.outcome == "success" and not result.episode.deviations
    written = result.episode.text(next(e.text for e in result.episode.entries if e.id == 4))
    assert written == "B-14"  # the literal itself: less than its line, as a preview could show
    assert result.visible_at_end("RULE-MID-02")  # pinned: whole
    assert_contract(result)


def test_the_oracle_keeps_a_whole_file_literal_verbatim():
    """A file's whole content, posted elsewhere, is a need: it is kept verbatim, as the tool printed it."""
    from optimizer.context.history import Entry, EntryKind
    from optimizer.context.strategies.oracle import kept_content

    body = "\n".join(f"line {i}: the company’s figures" for i in range(12))
    content = json.dumps({"file_content": body, "other": "x" * 50})
    literal = json.dumps(body)[1:-1]  # as the tool printed it: JSON-escaped, \u2019 included
    raw = Entry(4, EntryKind.RESULT, content, 1, 0)
    # A short literal (a tweet id "1", needed by a later call) beside the whole-file one keeps both (a BFCL
    # task's tweeted diff once lost its second line, and the oracle failed the task).
    assert kept_content(raw, content, ["1", literal, "absent"]) == f"1\n{literal}"
    assert kept_content(raw, content, []) == ""


def test_the_units_holding_a_literal_that_spans_a_whole_multi_line_leaf():
    """A file's whole content, posted elsewhere, is a need: the leaf it sits in is what holds it (the
    proposers derive their rules from these units)."""
    from optimizer.context.extraction import needed_units, parse_units

    body = "\n".join(f"line {i}: the company’s figures" for i in range(12))
    content = json.dumps({"file_content": body, "other": "x" * 50})
    literal = json.dumps(body)[1:-1]  # as the tool printed it: JSON-escaped, \u2019 included
    parsed = parse_units(content)
    kept = needed_units(parsed, [literal])
    assert json.loads(render(parsed, kept)) == {"file_content": body}
    assert needed_units(parsed, ["line 3: the company\\u2019s figures"]) == [3]
    # A short literal one line holds (an id "1", needed by a later call) must not hide the whole-leaf one
    # (a BFCL task whose tweeted diff lost its second line).
    assert json.loads(render(parsed, needed_units(parsed, ["1", literal]))) == {"file_content": body}
