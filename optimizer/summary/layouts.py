"""Written starting layouts for a summary search, beside the seed's history text as written.

Which layout a summarizer follows is the summarizer's to show, not ours to assume: on 6 reach_long train tasks
(`benchmarks/probe_summary_layout.py`, each with the contract) the 0.5B summarizer kept 6 of 12 facts and left
every needed fact visible on half the tasks with the facts first, against 3 of 13 and a sixth with the seed's
order, where it loops in the PROGRESS prose it is asked for first and never reaches VARIABLES; the 1.5B summarizer
kept 3 of 9 facts first and 6 of 9 in the seed's order (it copied the task's own steps as the facts). So the search
screens every start on train and goes on from the best (`optimizer.summary.search.learn`); these texts are
acon's, written once, and the optimizer's lines are counted against the start they were added to.
"""

from __future__ import annotations

from optimizer.context.guideline import SEED_GUIDELINE, read_guideline

# The seed's sections with the ones that carry values first and progress as one closing line, so that a small
# model's loop or a token cap can only cut prose.
FACTS_FIRST = (
    "You maintain the working memory of an agent that is partway through a task. Rewrite the earlier\n"
    "steps as a short structured summary the agent can continue from without re-reading anything.\n\n"
    "Use exactly these sections, in this order, as bullet points:\n\n"
    "VARIABLES: every identifier, number and value the remaining work may need, as `name = value`\n"
    "(order ids, customer ids, ticket ids, amounts, quantities, dates, file names, page numbers).\n"
    "Copy each value exactly; never round, shorten or invent one.\n"
    "DONE: writes that already happened (created, sent, refunded, booked), each with its id, so that\n"
    "none is repeated.\n"
    'ERRORS AND WARNINGS: every error message and every "partial results" warning, word for word.\n'
    "PROGRESS: one line: what is done and the next step.\n\n"
    "Drop pleasantries, repeated text, formatting, and tool output the task will not use again."
)

# name -> text; the search names a start `<name>+contract` once the contract is appended.
STARTS: dict[str, str] = {"facts-first": FACTS_FIRST}


def starts_for(seed_text: str) -> dict[str, str]:
    """The layouts rearrange acon's seed: a search from a user's own history text starts from that text alone."""
    return dict(STARTS) if seed_text.strip() == read_guideline(SEED_GUIDELINE).history.strip() else {}
