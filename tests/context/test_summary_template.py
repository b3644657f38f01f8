"""Summary instructions as a LangChain template: free text, and text with lines after the conversation."""

from __future__ import annotations

from optimizer.context.summary_template import split_closing, summary_prompt, with_closing


def test_free_text_gets_the_slot_and_keeps_its_braces():
    prompt = summary_prompt("Keep ids like {ORD-1}.")
    assert prompt.format(messages="M") == "Keep ids like {ORD-1}.\n\n<messages>\nMessages to summarize:\nM\n</messages>"


def test_a_closing_part_runs_after_the_messages_and_reads_back():
    text = with_closing("Keep ids like {ORD-1}.", "Copy each {rule} line.")
    assert summary_prompt(text) == text  # a template already: what ran is what is exported
    assert text.format(messages="M").endswith("M\n</messages>\n\nCopy each {rule} line.")
    assert split_closing(text) == ("Keep ids like {ORD-1}.", "Copy each {rule} line.")


def test_no_closing_is_free_text():
    assert with_closing("Keep ids.", "  ") == "Keep ids."
    assert split_closing("Keep ids.") == ("Keep ids.", "")
