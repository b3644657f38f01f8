"""The canary probe: one fixed conversation, run under each strategy; which identifiers survive where.

The conversation is a restocking task whose tool results carry every retention class, each with an
identifier planted in it:

- a skill file (`load_skill`, registered `skill`) with `RULE-HEAD-01`, `RULE-MID-02` and
  `RULE-TAIL-03` at the head, middle and tail of a long SKILL.md;
- a write (`create_order`, `side_effect=True`) whose receipt names `PO-5521` (runtime must-keep);
- a search page with a "showing 1-20 of 47" warning (`partial=True`, must-keep) and a failed search
  with error `E-QUERY-17` (`is_error=True`, must-keep);
- two long static documents (`read_doc`), the first with `FACT-STATIC-77` in its middle;
- a stock read before and after the write; the latest value `on_hand: 28` is the one that counts.

A `ReferenceAgent` with no needs replays the same calls under every strategy, so the trajectories
are identical and only the context differs; all five checkpoints are recorded by the real loop. The
report takes the final step (the finish, when everything has been read) and lists, per checkpoint,
the identifiers still present and the tokens there, plus the reduction at checkpoint 5 against
`none`, which is always run as the control.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from optimizer.agent.episode import CHECKPOINTS, Episode
from optimizer.agent.loop import EpisodeServices, run_episode
from optimizer.agent.reference import ReferenceAgent
from optimizer.context.compressor import Compressor
from optimizer.context.strategies import NoCompression
from optimizer.context.strategies.base import ContextStrategy
from optimizer.errors import AconError
from optimizer.tokens import count_tokens
from optimizer.world import (
    CheckResult,
    Environment,
    ReferenceStep,
    RetentionClass,
    Task,
    ToolCall,
    ToolOutput,
    ToolSpec,
    UserTurn,
    object_schema,
)

CONTROL: str = NoCompression.model_fields["type"].default

PAGE_WARNING = "showing 1-20 of 47"
# Identifier -> retention class of the result it is planted in.
IDENTIFIERS: dict[str, RetentionClass] = {
    "RULE-HEAD-01": RetentionClass.SKILL,
    "RULE-MID-02": RetentionClass.SKILL,
    "RULE-TAIL-03": RetentionClass.SKILL,
    "PO-5521": RetentionClass.WRITE_RECEIPT,
    PAGE_WARNING: RetentionClass.ERROR_PARTIAL,
    "E-QUERY-17": RetentionClass.ERROR_PARTIAL,
    "FACT-STATIC-77": RetentionClass.STATIC,
    "on_hand: 28": RetentionClass.DYNAMIC_STATE,
}

TASK = (
    "Restock widget W-778. Follow the inventory-restock skill, look the widget up in the catalogue guide and "
    "the catalogue search, check the stock, place one restock order for 12 units, re-read the stock, check "
    "the shipping manual, and report the purchase order id."
)

_TOPICS = (
    "Stock figures come from the warehouse system and are refreshed after every booking.",
    "Suppliers confirm restock orders within one working day; late confirmations are escalated.",
    "Hall managers approve any move of more than forty units between halls.",
    "Damaged units are booked out before a restock is planned, never after.",
    "Bin labels use the hall number, the aisle and a two-digit shelf code.",
    "Carriers collect from the loading dock at 10:00 and 15:30 on working days.",
    "Quantities are always whole units; packs are broken down before booking.",
    "A restock that crosses a month boundary is reported in the month it was ordered.",
    "Seasonal items keep a safety stock of ten per cent above the forecast.",
    "Returns are inspected within two days and re-shelved only if the seal is intact.",
    "Price changes take effect at midnight and never affect orders already placed.",
    "Every order carries the requester's team code for cost allocation.",
)


def _prose(section: str, lines: int, offset: int = 0) -> list[str]:
    return [f"- {section} {i + 1}: {_TOPICS[(i + offset) % len(_TOPICS)]}" for i in range(lines)]


SKILL_MD = "\n".join(
    [
        "# SKILL: inventory-restock (version 2.3)",
        "RULE-HEAD-01: read the current stock with get_stock before placing any order.",
        "",
        "## Background",
        *_prose("background", 20),
        "",
        "## Ordering",
        "RULE-MID-02: place at most one order per sku per task; if a receipt exists, never order again.",
        *_prose("ordering", 20, 5),
        "",
        "## Reporting",
        *_prose("reporting", 8, 9),
        "RULE-TAIL-03: report the purchase order id exactly as the receipt shows it.",
    ]
)

CATALOG_GUIDE = "\n".join(
    [
        "# Catalogue guide (docs/catalog-guide.md)",
        *_prose("catalogue section", 55),
        "FACT-STATIC-77: widget W-778 is stored in bin B-14 of hall 3.",
        *_prose("catalogue section", 55, 7),
    ]
)

SHIPPING_MANUAL = "\n".join(
    [
        "# Shipping manual (docs/shipping-manual.md)",
        *_prose("shipping rule", 110, 3),
    ]
)

SEARCH_PAGE = "\n".join(
    [
        f"{PAGE_WARNING} results for 'widget W-778' (more pages available)",
        *(
            f"{i}. sku W-7{70 + i:02d} | widget series {i % 4 + 1} | hall {i % 3 + 1}, aisle {i % 9 + 1} | "
            f"supplier S-{100 + i} | {_TOPICS[i % len(_TOPICS)]} {_TOPICS[(i + 5) % len(_TOPICS)]}"
            for i in range(1, 21)
        ),
    ]
)

ERROR_LINE = "ERROR E-QUERY-17: unbalanced '[' in query 'sku:[W-778'."

RECEIPT_LINES = ("purchase_order: PO-5521", "status: created")


def _stock(on_hand: int, at: str) -> str:
    return f"sku: W-778\non_hand: {on_hand}\nreserved: 4\nupdated: {at}"


TOOLS = (
    ToolSpec(
        "load_skill", "Load a SKILL.md by name.", object_schema(name="string"), retention_class=RetentionClass.SKILL
    ),
    ToolSpec("read_doc", "Read a document.", object_schema(path="string"), retention_class=RetentionClass.STATIC),
    ToolSpec(
        "search_catalog",
        "Search the catalogue (20 hits per page).",
        object_schema(query="string"),
        retention_class=RetentionClass.STATIC,
    ),
    ToolSpec(
        "get_stock",
        "Current stock of a sku.",
        object_schema(sku="string"),
        retention_class=RetentionClass.DYNAMIC_STATE,
    ),
    ToolSpec(
        "create_order",
        "Place a restock order; returns a receipt.",
        object_schema(sku="string", quantity="integer"),
        side_effect=True,
    ),
)

REFERENCE = (
    ToolCall("c1", "load_skill", {"name": "inventory-restock"}),
    ToolCall("c2", "read_doc", {"path": "docs/catalog-guide.md"}),
    ToolCall("c3", "search_catalog", {"query": "widget W-778"}),
    ToolCall("c4", "search_catalog", {"query": "sku:[W-778"}),
    ToolCall("c5", "get_stock", {"sku": "W-778"}),
    ToolCall("c6", "create_order", {"sku": "W-778", "quantity": 12}),
    ToolCall("c7", "get_stock", {"sku": "W-778"}),
    ToolCall("c8", "read_doc", {"path": "docs/shipping-manual.md"}),
)


class CanaryWarehouse(Environment):
    """The canary's tools. Deterministic; the stock drops by what was ordered."""

    def __init__(self) -> None:
        self.on_hand = 40
        self.orders: list[int] = []

    def tools(self, turn: int) -> Sequence[ToolSpec]:
        return TOOLS

    def call(self, call: ToolCall, turn: int) -> ToolOutput:
        args = call.arguments
        if call.name == "load_skill":
            return ToolOutput(SKILL_MD)
        if call.name == "read_doc":
            docs = {"docs/catalog-guide.md": CATALOG_GUIDE, "docs/shipping-manual.md": SHIPPING_MANUAL}
            path = str(args.get("path", ""))
            if path not in docs:
                error = f"ERROR: no document {path!r}"
                return ToolOutput(error, is_error=True, must_keep=(error,))
            return ToolOutput(docs[path])
        if call.name == "search_catalog":
            if "[" in str(args.get("query", "")):
                return ToolOutput(ERROR_LINE, is_error=True, must_keep=(ERROR_LINE,))
            return ToolOutput(SEARCH_PAGE, partial=True, must_keep=(SEARCH_PAGE.splitlines()[0],))
        if call.name == "get_stock":
            return ToolOutput(_stock(self.on_hand, f"2025-01-06T09:{12 + 3 * len(self.orders):02d}Z"))
        if call.name == "create_order":
            quantity = int(args.get("quantity", 0))
            self.orders.append(quantity)
            self.on_hand -= quantity
            return ToolOutput(
                "\n".join([*RECEIPT_LINES, "sku: W-778", f"quantity: {quantity}"]), must_keep=RECEIPT_LINES
            )
        return ToolOutput(f"ERROR: unknown tool {call.name!r}", is_error=True)

    def check(self, answers: Sequence[str | None]) -> CheckResult:
        reasons = []
        if self.orders != [12]:
            reasons.append(f"expected one order of 12, got {self.orders}")
        if "PO-5521" not in (answers[0] or "" if answers else ""):
            reasons.append("answer does not name PO-5521")
        return CheckResult(not reasons, tuple(reasons))


def canary_task() -> Task:
    """The fixed canary conversation as a task with a need-free reference solution."""
    reference = tuple(ReferenceStep(0, call) for call in REFERENCE)
    reference += (ReferenceStep(0, answer="Ordered 12 x W-778: purchase order PO-5521."),)
    return Task(
        "canary",
        "canary",
        (UserTurn(TASK),),
        CanaryWarehouse,
        reference=reference,
        max_steps_per_turn=len(reference) + 2,
    )


@dataclass(frozen=True)
class Checkpoint:
    surviving: tuple[str, ...]
    tokens: int


@dataclass(frozen=True)
class StrategyResult:
    """One strategy's canary run, measured at the final step of its episode."""

    name: str
    label: str
    episode: Episode
    checkpoints: Mapping[int, Checkpoint]
    reduction: float

    def lost_at(self, identifier: str) -> int | None:
        """First checkpoint (2-5) at which `identifier` is missing at the final step; None if it survives."""
        for number in CHECKPOINTS:
            if identifier not in self.checkpoints[number].surviving:
                return number
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "reduction": self.reduction,
            "checkpoints": {
                str(n): {"surviving": list(c.surviving), "tokens": c.tokens}
                for n, c in sorted(self.checkpoints.items())
            },
        }


@dataclass(frozen=True)
class CanaryReport:
    identifiers: tuple[str, ...]
    results: Mapping[str, StrategyResult]

    def to_json(self) -> dict[str, Any]:
        return {
            "identifiers": list(self.identifiers),
            "strategies": {name: result.to_json() for name, result in self.results.items()},
        }


def measure(episode: Episode, identifiers: Sequence[str] = tuple(IDENTIFIERS)) -> dict[int, Checkpoint]:
    """Identifiers present and tokens at each checkpoint of the episode's final step.

    Checkpoint 1 holds the raw tool results only; 2-4 every entry of the history or view; 5 is the
    request without the system prompt, counted as the agent's input tokens (message framing included).
    """
    last = len(episode.steps) - 1
    out: dict[int, Checkpoint] = {}
    for number in CHECKPOINTS:
        texts = episode.checkpoint_texts(number, last)
        surviving = tuple(i for i in identifiers if any(i in text for text in texts))
        tokens = episode.steps[last].input_tokens if number == 5 else sum(count_tokens(t) for t in texts)
        out[number] = Checkpoint(surviving, tokens)
    return out


def run_canary(
    strategies: Mapping[str, ContextStrategy],
    *,
    compressor: Compressor | None = None,
    on_result: Callable[[StrategyResult], None] | None = None,
) -> CanaryReport:
    """Run the canary under `strategies` (name -> strategy); `none` is added as the control if absent."""
    if CONTROL not in strategies:
        strategies = {CONTROL: NoCompression(), **strategies}
    else:
        strategies = {CONTROL: strategies[CONTROL], **strategies}
    task = canary_task()
    episodes: dict[str, Episode] = {}
    results: dict[str, StrategyResult] = {}
    baseline = 0
    for name, strategy in strategies.items():
        if strategy.uses_compressor and compressor is None:
            raise AconError(f"canary: strategy {name!r} needs a compressor endpoint")
        agent = ReferenceAgent(task.reference or ())
        episode = run_episode(task, agent, strategy, EpisodeServices(compressor=compressor))
        if episode.outcome == "infra_error":
            raise AconError(f"canary: {name} could not run: {episode.error}")
        episodes[name] = episode
        checkpoints = measure(episode)
        if name == CONTROL:
            baseline = checkpoints[5].tokens
        reduction = 1.0 - checkpoints[5].tokens / baseline if baseline else 0.0
        results[name] = StrategyResult(name, strategy.label(), episode, checkpoints, reduction)
        if on_result is not None:
            on_result(results[name])
    return CanaryReport(tuple(IDENTIFIERS), results)
