from optimizer.summary.restated import restated_lines

TASK = (
    "Send the customer with email elias.haddad47@example.com a gift card worth the unit price of the product in "
    "their most recent order. Work in this order: 1) Read the 'gift cards' skill with read_skill and follow its "
    "rules. 2) Find the customer id with get_customer. 3) Call list_orders with page 1. 4) Call list_orders with "
    "page 2. 5) Call get_order with the order id that page 2 lists (the most recent order). 6) Call finish with the "
    "answer 'gift card <gift card id, GC-...> for <customer id, CUS-...>'."
)
RESULTS = (
    "customer_id: CUS-618\nmember since: 2019-07-16",
    "order ORD-9198 | placed 2026-08-27 | 4 item(s) | total 176.13 EUR\npage 2 of 2: no more orders",
)
# The 1.5B summarizer's only summary of a validation task at tier 1 (escaped as it wrote it).
PLAN_AGAIN = """- **Read the 'gift cards' skill with read_skill and follow its rules.**
- **Find the customer id with get_customer.**
- **Call list_orders with page 1.**
- **Call list_orders with page 2.**
- **Call get_order with the order id that page 2 lists (the most recent order).**
- **Call finish with the answer 'gift card &lt;gift card id, GC-...&gt; for &lt;customer id, CUS-...&gt;'**"""


def test_the_task_plan_again_with_no_result_is_a_restated_task():
    lines = restated_lines(PLAN_AGAIN, TASK, RESULTS)
    assert len(lines) == 6
    assert lines[1] == "Find the customer id with get_customer."


def test_the_plan_with_a_value_a_result_returned_is_not():
    assert restated_lines(PLAN_AGAIN + "\n- customer id: CUS-618", TASK, RESULTS) == ()
    assert restated_lines(PLAN_AGAIN.replace("page 2 lists", "page 2 lists (ORD-9198)"), TASK, RESULTS) == ()


def test_a_value_the_task_itself_states_does_not_count_as_a_result():
    # "page 1" and "page 2" occur in results as well, but the task said them first.
    assert restated_lines(PLAN_AGAIN + "\n- Call list_orders with page 2.", TASK, RESULTS)


def test_a_summary_of_results_in_its_own_words_is_not():
    summary = """PROGRESS:
- get_customer returned the customer CUS-618.
- list_orders page 2 of 2 shows the most recent order ORD-9198 (176.13 EUR).
NEXT: get_order for that order."""
    assert restated_lines(summary, TASK, RESULTS) == ()


def test_a_summary_mostly_of_other_words_is_not_even_without_values():
    summary = """The agent looked the customer up and listed their orders over two pages.
It has not yet opened the most recent order or the product it holds.
- Call list_orders with page 2."""
    assert restated_lines(summary, TASK, RESULTS) == ()


def test_headings_alone_are_not_lines():
    assert restated_lines("PROGRESS:\nVALUES:\n-", TASK, RESULTS) == ()
