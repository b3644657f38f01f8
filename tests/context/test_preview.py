"""Previews end and start at a line or word boundary, within the token budget they are given."""

from __future__ import annotations

import pytest

from optimizer.context import preview
from optimizer.tokens import count_tokens, last_tokens, truncate_to_tokens

WORDS = " ".join(f"ORD-{7000 + i} status=shipped carrier=DHL-EXPRESS" for i in range(60))
LINES = "\n".join(f"row {i}: ORD-{7000 + i} shipped via DHL-EXPRESS to Hamburg" for i in range(60))


def _words(text: str) -> set[str]:
    return set(text.split())


@pytest.mark.parametrize("text", [WORDS, LINES], ids=["words", "lines"])
@pytest.mark.parametrize("budget", [7, 13, 40, 101])
def test_head_and_tail_keep_only_whole_words_within_the_budget(text, budget):
    for cut in (preview.head(text, budget), preview.tail(text, budget)):
        assert cut and _words(cut) <= _words(text), cut  # every word in the preview is a word of the text
        assert count_tokens(cut) <= budget
    assert text.startswith(preview.head(text, budget))
    assert text.endswith(preview.tail(text, budget))


def test_the_plain_token_cut_splits_a_word_here_so_the_test_above_can_fail():
    raw_head, raw_tail = truncate_to_tokens(WORDS, 13), last_tokens(WORDS, 13)
    assert not _words(raw_head) <= _words(WORDS) and not _words(raw_tail) <= _words(WORDS)


def test_a_line_boundary_is_preferred_when_it_keeps_half_the_budget():
    head = preview.head(LINES, 40)
    assert head.endswith("Hamburg") and "\n" in head
    tail = preview.tail(LINES, 40)
    assert tail.startswith("row ")


def test_a_short_text_is_returned_whole_and_a_zero_budget_gives_nothing():
    assert preview.head("two words\n", 50) == "two words\n"
    assert preview.tail("two words\n", 50) == "two words\n"
    assert preview.head(WORDS, 0) == "" and preview.tail(WORDS, 0) == ""


def test_a_text_without_spaces_keeps_the_token_cut_rather_than_nothing():
    blob = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo" * 40
    assert preview.head(blob, 10) == truncate_to_tokens(blob, 10)
    assert preview.tail(blob, 10) == last_tokens(blob, 10)


def test_a_character_split_across_tokens_is_not_decoded_into_a_replacement_mark():
    text = "日本語のテキスト " * 50
    for cut in (preview.head(text, 9), preview.tail(text, 9)):
        assert "\ufffd" not in cut and cut


SHEET = "\n".join(
    ["# Product sheet SKU-1448"]
    + [f"SKU-1448 spec {i:02d}: warranty: 24 months from delivery" for i in range(1, 40)]
    + ["unit price: 95.34 EUR"]
    + [f"SKU-1448 spec {i:02d}: care: wipe with a dry cloth" for i in range(40, 55)]
)


def test_the_cut_marker_names_the_lone_line_among_rows_alike_and_counts_what_it_hides():
    head, tail = preview.head(SHEET, 60), preview.tail(SHEET, 30)
    marker = preview.cut_marker(SHEET, head, tail, 4)
    cut = [line for line in SHEET[len(head) : len(SHEET) - len(tail)].splitlines() if line.strip()]
    assert marker.startswith(f"[... {len(cut)} lines cut, among them ")
    assert '"unit price"' in marker and "95.34" not in marker  # the kind is named, its value stays behind recall
    assert f"(+{len(cut) - 2} alike)" in marker


def test_the_rarest_kinds_are_named_first_and_the_rest_counted():
    text = "head\n" + "\n".join(["a: 1", "a: 2", "a: 3", "b: 1", "c: 1", "c: 2"]) + "\ntail"
    marker = preview.cut_marker(text, "head", "tail", 1)
    assert '"b"' in marker and '"a"' not in marker and "2 more kinds" in marker


def test_off_or_with_nothing_cut_the_marker_is_the_bare_one():
    assert preview.cut_marker(SHEET, "x", "y", 0) == "[... preview cut ...]"
    assert preview.cut_marker("ab", "a", "b", 5) == "[... preview cut ...]"


def test_offload_leaves_its_knob_out_of_the_policy_when_off_so_shipped_guidelines_keep_their_version():
    from optimizer.context.moves.offload import Offload

    assert "name_cut" not in Offload().model_dump()
    assert Offload(name_cut=3).model_dump()["name_cut"] == 3
