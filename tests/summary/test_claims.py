"""False claims of progress: the sentences small summarizers wrote on `reach_long` train tasks, and their
counterparts that are not claims."""

from __future__ import annotations

import pytest

from optimizer.summary.claims import false_claims

PENDING = {"verify_customer", "send_gift_card", "finish"}


@pytest.mark.parametrize(
    "sentence",
    [
        "The agent has called verify_customer for the customer before sending the gift card.",
        "The agent has verified the customer using `verify_customer`.",
        "I have called finish with the answer.",
        "PROGRESS: The agent called send_gift_card with the unit price.",
    ],
)
def test_a_step_said_done_before_it_was_done_is_a_claim(sentence):
    assert false_claims(f"The agent read the skill with read_skill. {sentence}", PENDING) == (
        " ".join(sentence.split()),
    )


@pytest.mark.parametrize(
    "summary",
    [
        "The user will then call `verify_customer` with the customer ID to ensure the customer is valid.",
        "7) Call send_gift_card with the amount set to the unit price. 8) Call finish with the answer.",
        "The agent has not called verify_customer yet.",
        "If the customer is new, the agent has called verify_customer.",
        "TODO:\n- The agent has to call verify_customer, then send_gift_card was the next step.",
        "PROGRESS: The agent has read the skill with read_skill.",  # a tool it did call
        "The agent has done what the skill's rules require.",  # no tool named: missed by design
    ],
)
def test_future_negated_pending_or_true_steps_are_not_claims(summary):
    assert false_claims(summary, PENDING) == ()


def test_a_section_of_steps_to_do_ends_at_the_next_heading():
    summary = "TODO: call finish.\nDONE:\n- The agent has sent the gift card with send_gift_card."
    assert false_claims(summary, PENDING) == ("- The agent has sent the gift card with send_gift_card.",)


def test_a_tool_name_inside_another_name_is_not_that_tool():
    assert false_claims("The agent has called finish_order.", {"finish"}) == ()
    assert false_claims("The agent has called the tool.", set()) == ()
