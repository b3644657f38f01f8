"""The local models' JSON actions become `tool_calls`; text that is not a call of a given tool stays text."""

from __future__ import annotations

import json

import pytest

from optimizer.llm.local.actions import Action, read_actions, tool_call_dicts

FENCED = '```json\n{\n  "name": "read_doc",\n  "arguments": {\n    "name": "refunds"\n  }\n}\n```'  # 1.5B, verbatim


@pytest.mark.parametrize(
    "text",
    [
        FENCED,
        '{"name": "read_doc", "arguments": {"name": "refunds"}}',
        '<tool_call>\n{"name": "read_doc", "arguments": {"name": "refunds"}}\n</tool_call>',
        '{"name": "read_doc", "arguments": "{\\"name\\": \\"refunds\\"}"}',  # arguments as a JSON string
        '{"name": "read_doc", "parameters": {"name": "refunds"}}',
        '{{"name": "read_doc", "arguments": {"name": "refunds"}}}}',  # 1.5B with a system prompt, verbatim
    ],
)
def test_each_form_the_models_write_is_one_call(text):
    assert read_actions(text, ["read_doc"]) == ([Action("read_doc", '{"name": "refunds"}')], "")


def test_prose_around_a_call_stays_as_text():
    text = 'I will read it.\n```json\n{"name": "recall", "arguments": {"handle": "h1"}}\n```\nThen answer.'
    actions, rest = read_actions(text, ["read_doc", "recall"])
    assert actions == [Action("recall", '{"handle": "h1"}')]
    assert rest == "I will read it.\n\nThen answer."


def test_a_list_of_calls_is_every_call_in_order():
    text = '```json\n[{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"x": 1}}]\n```'
    assert read_actions(text, ["a", "b"])[0] == [Action("a", "{}"), Action("b", '{"x": 1}')]


@pytest.mark.parametrize(
    "text",
    [
        "Team REF-7 approves refunds over 50 EUR.",
        '{"name": "Bob", "arguments": {}}',  # not one of the request's tools
        '```json\n{"name": "read_doc"}\n```',  # no arguments object
        '```json\n{"name": "read_doc", "arguments": [1]}\n```',
        '{"name": "read_doc", "arguments": {"name": ',  # cut off
    ],
)
def test_what_is_not_a_call_of_a_given_tool_stays_text(text):
    assert read_actions(text, ["read_doc"]) == ([], text.strip())


def test_call_ids_are_stable_per_reply_and_distinct_within_it():
    actions = [Action("a", "{}"), Action("a", "{}")]
    first, again = tool_call_dicts(actions, "r1"), tool_call_dicts(actions, "r1")
    assert first == again and first[0]["id"] != first[1]["id"]
    assert first[0]["function"] == {"name": "a", "arguments": "{}"} and first[0]["type"] == "function"
    assert json.loads(first[1]["function"]["arguments"]) == {}
