"""Invented values: ids and amounts a summary states that nothing the summarizer was given holds.

Facts kept counts the needed literals a summary carries; it cannot see a summary that carries them and also
states values it made up. Under the seed's `name = value` section the 1.5B local summarizer wrote, on a
`reach_long` train task, `sku = SKU-123, unit_price = 10.00, reservation_id = RSV-456` beside the customer id it
kept: the screen counted the summary among those that kept their facts, and a real agent reads every value in a
summary as true. A value is invented when it has the shape of an id (letters and digits in one token, as in
`RSV-456`) or an amount (digits around a decimal point) and occurs in no text the summarizer could have copied
it from. Bare integers are left out: "10" occurs somewhere in almost any history, so the check would only
ever miss them, and a heuristic that can only miss should not pretend to look.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from optimizer.world.needs import occurs

_VALUE = re.compile(r"(?<![\w.-])(?:(?=[\w-]*[A-Za-z])(?=[\w-]*\d)[A-Za-z][\w-]*\d[\w-]*|\d+\.\d+)(?![\w-])")


def invented_values(summary: str, given: Iterable[str]) -> tuple[str, ...]:
    """The id- and amount-shaped tokens of `summary` that occur in none of `given` (each once, in order)."""
    sources = "\n".join(given)
    found: list[str] = []
    for token in _VALUE.findall(summary):
        token = token.rstrip("-")
        if token and token not in found and not occurs(token, sources):
            found.append(token)
    return tuple(found)


def lines_with(summary: str, values: Iterable[str]) -> tuple[str, ...]:
    """The lines of `summary` that state any of `values` (each once, in order): what the optimizer is shown."""
    wanted = tuple(values)
    out: list[str] = []
    for line in summary.splitlines():
        said = " ".join(line.split())
        if said and said not in out and any(occurs(v, said) for v in wanted):
            out.append(said)
    return tuple(out)
