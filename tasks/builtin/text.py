"""Vocabulary, id allocation, money formatting and size-budgeted filler for the operations world.

Every literal a reference step needs is drawn from an `Ids` pool so that filler (other orders, other
products, other tickets) can never produce the same string by accident: filler ids are drawn from the
same pool after the key ids are reserved.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence

from optimizer.tokens import count_tokens

TODAY = "2024-05-14"

FIRST = (
    "Maria",
    "Jonas",
    "Aisha",
    "Tomasz",
    "Elena",
    "Lukas",
    "Sofia",
    "Mateo",
    "Ingrid",
    "Pavel",
    "Chloe",
    "Ruben",
    "Nadia",
    "Oskar",
    "Lea",
    "Dario",
    "Freya",
    "Hugo",
    "Amira",
    "Janne",
    "Carla",
    "Viktor",
    "Ines",
    "Milan",
    "Noor",
    "Emil",
    "Greta",
    "Tariq",
    "Alba",
    "Finn",
)
LAST = (
    "Jensen",
    "Kowalski",
    "Moreau",
    "Novak",
    "Rossi",
    "Schmidt",
    "Lindqvist",
    "Garcia",
    "Van Dijk",
    "Horvat",
    "Dubois",
    "Bianchi",
    "Nieminen",
    "Fischer",
    "Costa",
    "Murphy",
    "Svoboda",
    "Keller",
    "Silva",
    "Berg",
    "Laurent",
    "Popescu",
    "Weber",
    "Ortiz",
    "Hansen",
    "Kova",
    "Marino",
    "Petit",
    "Janssen",
    "Olsen",
)

BRANDS = (
    "Aurora",
    "Nordvik",
    "Halden",
    "Corvo",
    "Lumea",
    "Tessel",
    "Brightwell",
    "Okapi",
    "Verano",
    "Kestrel",
)
COLOURS = (
    "graphite",
    "sand",
    "forest green",
    "slate blue",
    "brushed steel",
    "matte black",
    "ivory",
    "terracotta",
)

# category noun -> (size variants, unit price range in EUR)
CATEGORIES: dict[str, tuple[tuple[str, ...], tuple[float, float]]] = {
    "kettle": (("1.0L", "1.5L", "1.7L", "2.0L"), (29.0, 119.0)),
    "blender": (("600W", "900W", "1200W", "1500W"), (49.0, 329.0)),
    "desk lamp": (("small", "medium", "large", "clamp"), (24.0, 149.0)),
    "office chair": (("standard", "tall", "mesh", "task"), (129.0, 649.0)),
    "backpack": (("18L", "24L", "30L", "40L"), (39.0, 219.0)),
    "headphones": (("on-ear", "over-ear", "in-ear", "studio"), (35.0, 399.0)),
    "yoga mat": (("4mm", "6mm", "8mm", "travel"), (19.0, 99.0)),
    "coffee grinder": (("manual", "burr", "conical", "flat-burr"), (29.0, 289.0)),
    "monitor stand": (("single", "dual", "riser", "gas-spring"), (34.0, 239.0)),
    "rain jacket": (("XS", "S", "M", "L", "XL"), (59.0, 289.0)),
    "hiking boots": (("EU 39", "EU 41", "EU 43", "EU 45"), (89.0, 259.0)),
    "cast-iron pan": (("20cm", "24cm", "28cm", "32cm"), (25.0, 139.0)),
}

# code -> (city, site name); the error code of an offline warehouse is derived from its code.
WAREHOUSES: dict[str, str] = {
    "WH-AMS2": "Amsterdam cross-dock",
    "WH-LEJ1": "Leipzig fulfilment centre",
    "WH-MAD3": "Madrid south hub",
    "WH-WAW1": "Warsaw east hub",
    "WH-DUB2": "Dublin returns and fulfilment",
    "WH-PRG1": "Prague central",
    "WH-MIL2": "Milan north",
    "WH-LYS1": "Lyon regional",
}

REGIONS = (
    "Germany",
    "France",
    "Spain",
    "Italy",
    "Netherlands",
    "Poland",
    "Ireland",
    "Austria",
    "Belgium",
    "Sweden",
)

POSITIONS = ("head", "middle", "tail")


def money(amount: float) -> str:
    """The one money format of the world: `EUR 1,314.45`. The `EUR ` prefix anchors substring checks."""
    return f"EUR {amount:,.2f}"


def person(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


def product_name(brand: str, category: str, size: str, colour: str) -> str:
    return f"{brand} {category} {size}, {colour}"


class Ids:
    """Unique ids per world. `reserve` key literals first; filler then never collides with them."""

    def __init__(self, rng: random.Random, taken: Iterable[str] = ()) -> None:
        self._rng = rng
        self._taken: set[str] = set(taken)

    def reserve(self, *values: str) -> None:
        self._taken.update(values)

    def __contains__(self, value: str) -> bool:
        return value in self._taken

    def new(self, prefix: str, digits: int = 5, *, hexa: bool = False, sep: str = "-") -> str:
        alphabet = "0123456789ABCDEF" if hexa else "0123456789"
        while True:
            first = self._rng.choice(alphabet[1:])  # no leading zero: ids read as fixed width
            value = f"{prefix}{sep}{first}{''.join(self._rng.choice(alphabet) for _ in range(digits - 1))}"
            if value not in self._taken:
                self._taken.add(value)
                return value

    def fresh(self, rng: random.Random, make: Callable[[random.Random], str]) -> str:
        """A filler value from a render-time `rng` that is not reserved; nothing is reserved, so render
        order never changes what later renders produce."""
        while True:
            candidate = make(rng)
            if candidate not in self._taken:
                return candidate

    def amount(self, low: float, high: float) -> float:
        """A money amount whose formatted string is unique in this world."""
        while True:
            value = round(self._rng.uniform(low, high), 2)
            key = money(value)
            if key not in self._taken:
                self._taken.add(key)
                return value


def fill(make_block: Callable[[], str], budget: int) -> list[str]:
    """Blocks from `make_block` until their tokens reach `budget` (per-block count, a close upper bound)."""
    blocks: list[str] = []
    used = 0
    while used < budget:
        block = make_block()
        cost = count_tokens(block) + 1
        if used + cost > budget and blocks:
            break
        blocks.append(block)
        used += cost
    return blocks


def place(blocks: Sequence[str], key: str | Sequence[str], position: str) -> list[str]:
    """Insert the key block(s) at the head (about 5%), middle (about 50%) or tail (about 95%) of `blocks`."""
    keys = [key] if isinstance(key, str) else list(key)
    n = len(blocks)
    fraction = {"head": 0.04, "middle": 0.5, "tail": 0.96}[position]
    index = min(n, max(1 if n > 2 else 0, round(n * fraction)))
    return [*blocks[:index], *keys, *blocks[index:]]


def clamp_tokens(lines: Sequence[str], budget: int, keep: Iterable[str] = ()) -> str:
    """Join lines; while the exact count exceeds `budget`, drop filler lines (never `keep`) from the end."""
    protected = set(keep)
    current = list(lines)
    text = "\n".join(current)
    over = count_tokens(text) - budget
    while over > 0:
        drop: set[int] = set()
        removed = 0
        for i in range(len(current) - 2, 0, -1):
            if removed > over:
                break
            if current[i] and current[i] not in protected:
                removed += count_tokens(current[i]) + 1
                drop.add(i)
        if not drop:  # pragma: no cover - budgets are always far above the protected lines
            break
        current = [line for i, line in enumerate(current) if i not in drop]
        text = "\n".join(current)
        over = count_tokens(text) - budget
    return text
