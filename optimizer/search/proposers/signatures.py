"""The DSPy programs the optimizer LLM runs: typed signatures whose docstrings are the instructions.

Their own module because defining them imports DSPy (most of a second): the proposers import this when
they first ask the model, so loading an experiment config or `acon --help` never does. Every input that
carries tool output or agent history is fenced as untrusted data, and each signature says so.
"""

from __future__ import annotations

import dspy

from optimizer.untrusted import UNTRUSTED_NOTICE


class ProposeRules(dspy.Signature):  # type: ignore[misc]  # dspy has no type information: Signature is Any
    r"""You write extraction rules for a context compressor of an AI agent. The compressor keeps, in code,
    only the lines (or JSON fields) of a tool result that a rule matches. Lines that held facts the agent
    needed were dropped. Each example shows the agent's request, then NEEDED lines of one result (the
    needed values masked as <VALUE>) and DROPPED lines of the same result, often rows of the same table.
    Write short RE2 patterns (under 40 characters) that match what the needed lines share and the
    dropped lines lack, in a way that holds for other requests of the same kind: a label or field name,
    a status word, a marker, a column value the request asks for. Never copy a whole line, never write
    a value or an id (they change from task to task): use \d+ for numbers and [A-Z]+ for codes.
    Examples: needed `payment: card ending <VALUE>, captured EUR 12.00` gives {"pattern": "^payment:"};
    needed `WARNING: showing 1-20 of <VALUE>` gives {"pattern": "^WARNING:"}; needed
    `"current_working_directory": "<VALUE>"` gives {"pattern": ".", "field": "current_working_directory"};
    for the request "list my active accounts", needed rows `<VALUE>  ACTIVE  owner` and dropped rows
    `u-118  DISABLED  owner` give {"pattern": "\\bACTIVE\\b"}.
    If no short pattern separates the needed lines from the dropped ones, return []. Then, if the policy
    also uses an LLM compressor, write one sentence for its instruction that names the kind of content
    that was lost; otherwise write none."""

    policy: str = dspy.InputField(desc="The current retention policy (JSON).")
    examples: str = dspy.InputField(
        desc="Per result: the request, its tool, class and the move that dropped it, then its NEEDED and "
        "DROPPED lines (fenced, untrusted)."
    )
    rules: str = dspy.OutputField(
        desc='A JSON list, e.g. [{"pattern": "^payment:", "tool": "get_order", "field": null}]; at most 4 rules.'
    )
    instruction_edit: str = dspy.OutputField(desc="One sentence to add to the compressor instructions, or none.")


class ShortenGuideline(dspy.Signature):  # type: ignore[misc]  # as above
    """You make the instructions of a context compressor for an AI agent produce shorter outputs
    without losing what the agent still uses. The analysis shows what compressed outputs contained
    that the agent never used later. Rewrite both instructions with concrete anti-verbosity rules
    while keeping every rule about what must be kept. Never copy ids or values. Keep each
    instruction under 250 words."""

    history_instruction: str = dspy.InputField(desc="Current history-compressor instruction.")
    observation_instruction: str = dspy.InputField(desc="Current tool-result-compressor instruction.")
    retention_rules: str = dspy.InputField(desc="Fixed rules every compressor must follow.")
    unused_content: str = dspy.InputField(desc="What the compressed outputs kept that was never used.")
    new_history_instruction: str = dspy.OutputField(desc="The full rewritten, shorter-output history instruction.")
    new_observation_instruction: str = dspy.OutputField(desc="The full rewritten tool-result instruction.")


# dspy builds a new Signature class here; bound to the same name, so the programs and their prompts keep it.
ProposeRules = ProposeRules.with_instructions(f"{ProposeRules.instructions}\n{UNTRUSTED_NOTICE}")  # type: ignore[misc]
ShortenGuideline = ShortenGuideline.with_instructions(  # type: ignore[misc]
    f"{ShortenGuideline.instructions}\n{UNTRUSTED_NOTICE}"
)
