"""Executable extraction: keep the parts of a tool result that rules select, in code, with no model call.

A result is split into *units*: its lines, or for a JSON result its scalar leaves (each with the path of
keys above it; a long multi-line string leaf is split into its lines). A unit is kept when

- a rule matches it: an RE2 pattern (linear time, so a learned pattern cannot blow up), optionally
  limited to one tool and, for JSON, to leaves under one key;
- it *mentions* the request: it contains a strong term (a number of three or more digits, a phrase the
  user quoted, an argument value of one of the agent's calls so far), or enough of the user's words
  (`min_words`, and at least `top_ratio` of the best-matching unit's count). With `max_term_share` below 1,
  a strong term or literal found in more than that share of the result's units does not count: a year in
  the request, or the order id every line of that order repeats, marks every line and so selects none.
  `max_word_share` does the same for the user's words: "card charge" on every row of a statement, or
  "rain jacket" on every row of a catalog search for one, tells no row apart (a term or word found in a
  single unit always counts);
- it is among the first `head` or last `tail` units;
- or it is (or holds) a line the runtime vouched for (`must_keep`): those survive every cut anyway.

The kept units are rendered in their original order (JSON re-serialized with only the kept leaves), so
every literal reads exactly as the tool printed it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import re2
from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, field_validator, model_serializer

from optimizer.context.history import Entry, EntryKind
from optimizer.world.needs import occurs

MAX_PATTERN_CHARS = 200
MAX_RULES = 24
# A multi-line string leaf longer than this is split into its lines (a file's content, a long log).
SPLIT_STRING_CHARS = 160

_TOKEN = re.compile(r"[A-Za-z]+|\d+(?:[.,]\d+)*")
_QUOTED = re.compile(r"""['"‘“]([^'"’”\n]{2,60})['"’”]""")
_STOPWORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "from",
        "that",
        "this",
        "these",
        "those",
        "have",
        "has",
        "had",
        "are",
        "was",
        "were",
        "will",
        "would",
        "could",
        "should",
        "can",
        "into",
        "onto",
        "over",
        "under",
        "about",
        "after",
        "before",
        "then",
        "than",
        "them",
        "they",
        "their",
        "there",
        "here",
        "what",
        "which",
        "who",
        "whom",
        "when",
        "where",
        "why",
        "how",
        "all",
        "any",
        "each",
        "every",
        "some",
        "such",
        "only",
        "own",
        "same",
        "other",
        "more",
        "most",
        "very",
        "just",
        "also",
        "not",
        "our",
        "your",
        "you",
        "yours",
        "ours",
        "its",
        "his",
        "her",
        "him",
        "she",
        "been",
        "being",
        "does",
        "did",
        "doing",
        "done",
        "make",
        "made",
        "please",
        "need",
        "needs",
        "want",
        "wants",
        "like",
        "get",
        "got",
        "let",
        "lets",
        "use",
        "used",
        "using",
        "one",
        "two",
        "per",
        "via",
        "item",
        "items",
        "thing",
        "things",
    ]
)

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False


@lru_cache(maxsize=512)
def compile_pattern(pattern: str) -> Any:
    """An RE2 pattern (raises `ValueError` with RE2's reason when it does not compile)."""
    try:
        return re2.compile(pattern, options=_RE2_OPTIONS)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise ValueError(f"pattern {pattern!r} is not valid RE2: {reason}") from None


class ExtractRule(BaseModel):
    """Keep the units whose text the pattern matches."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pattern: str = Field(..., min_length=1, max_length=MAX_PATTERN_CHARS, description="RE2 pattern (searched).")
    tool: str | None = Field(None, description="Only results of this tool; None: any tool.")
    field: str | None = Field(None, description="JSON results: only leaves under this key.")

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        compile_pattern(pattern)
        return pattern

    def matches(self, unit: Unit, tool: str | None) -> bool:
        if self.tool is not None and self.tool != tool:
            return False
        if self.field is not None:
            return self.field in unit.keys and compile_pattern(self.pattern).search(unit.value) is not None
        return compile_pattern(self.pattern).search(unit.text) is not None


class Selection(BaseModel):
    """What an extraction keeps. Shared by the write-time and history-time `extract` moves."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rules: tuple[ExtractRule, ...] = Field((), max_length=MAX_RULES, description="Pattern rules, any may match.")
    mention_task: bool = Field(True, description="Keep units that mention the user's request.")
    mention_calls: bool = Field(True, description="Keep units holding an argument value of the agent's calls.")
    min_words: int = Field(3, ge=1, le=20, description="User words a unit must contain to count as mentioning.")
    top_ratio: float = Field(
        0.0, ge=0.0, le=1.0, description="…and at least this share of the best unit's word count (0: off)."
    )
    max_term_share: float = Field(
        1.0, gt=0.0, le=1.0, description="A term in more than this share of the result's units is not a mention."
    )
    max_word_share: float = Field(
        1.0, gt=0.0, le=1.0, description="A user word in more than this share of the units does not count."
    )
    head: int = Field(1, ge=0, le=200, description="First units always kept.")
    tail: int = Field(0, ge=0, le=200, description="Last units always kept.")

    @model_serializer(mode="wrap")
    def _without_unset_shares(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Left out while off, so a guideline written before the knobs existed keeps its version, and with it
        # its cached compressor replies and registry entries.
        data: dict[str, Any] = handler(self)
        for knob in ("max_term_share", "max_word_share"):
            if getattr(self, knob) == 1.0:
                data.pop(knob, None)
        return data


@dataclass(frozen=True)
class Unit:
    """One selectable piece of a result: a line, or a JSON leaf (or one line of a long string leaf)."""

    index: int
    text: str  # what mentions and unscoped rules are matched against
    value: str  # the leaf's value as text (a line: the line)
    keys: tuple[str, ...] = ()  # JSON: the dict keys on the path to the leaf
    path: tuple[str | int, ...] = ()  # JSON: the full path (keys and list indices)
    line: int | None = None  # a line of a split string leaf


@dataclass(frozen=True)
class Parsed:
    units: tuple[Unit, ...]
    data: Any = None  # the parsed JSON, or None for plain text
    ascii_only: bool = True

    @property
    def is_json(self) -> bool:
        return self.data is not None


def parse_units(content: str) -> Parsed:
    stripped = content.strip()
    if stripped[:1] in ("{", "["):
        try:
            data = json.loads(stripped)
        except ValueError:
            data = None
        if isinstance(data, dict | list):
            units = tuple(_json_units(data))
            if units:
                return Parsed(units, data, ascii_only=content.isascii())
    lines = content.splitlines()
    return Parsed(tuple(Unit(i, line, line) for i, line in enumerate(lines)))


def _json_units(data: Any) -> Iterable[Unit]:
    counter = 0

    def walk(node: Any, path: tuple[str | int, ...], keys: tuple[str, ...]) -> Iterable[Unit]:
        nonlocal counter
        if isinstance(node, dict):
            if not node:
                yield from leaf("{}", path, keys)
            for key, item in node.items():
                yield from walk(item, (*path, key), (*keys, str(key)))
        elif isinstance(node, list):
            if not node:
                yield from leaf("[]", path, keys)
            for i, item in enumerate(node):
                yield from walk(item, (*path, i), keys)
        elif isinstance(node, str) and "\n" in node and len(node) > SPLIT_STRING_CHARS:
            for number, line in enumerate(node.split("\n")):
                unit = Unit(counter, f"{_label(keys)}{line}", line, keys, path, number)
                counter += 1
                yield unit
        else:
            yield from leaf(node if isinstance(node, str) else json.dumps(node), path, keys)

    def leaf(value: str, path: tuple[str | int, ...], keys: tuple[str, ...]) -> Iterable[Unit]:
        nonlocal counter
        unit = Unit(counter, f"{_label(keys)}{value}", value, keys, path)
        counter += 1
        yield unit

    return walk(data, (), ())


def _label(keys: Sequence[str]) -> str:
    return f"{'.'.join(keys)}: " if keys else ""


@dataclass(frozen=True)
class Terms:
    """What a unit must mention to count as relevant to the request."""

    strong: frozenset[str]  # numbers, quoted phrases: one is enough
    literals: frozenset[str]  # exact argument values of the agent's calls: one is enough
    words: frozenset[str]  # the user's words: `min_words` of them


def request_terms(history_entries: Sequence[Entry], *, task: bool = True, calls: bool = True) -> Terms:
    """Terms from the user's messages and the agent's own calls so far (never from tool output)."""
    strong: set[str] = set()
    literals: set[str] = set()
    words: set[str] = set()
    for entry in history_entries:
        if task and entry.kind in (EntryKind.TASK, EntryKind.USER):
            numbers, plain = _split_terms(entry.content)
            strong |= numbers
            words |= plain
            strong |= {q.lower() for q in _QUOTED.findall(entry.content) if len(q.strip()) >= 3}
        if calls and entry.kind is EntryKind.ACTION:
            for call in entry.calls:
                for value in _scalar_values(call.arguments):
                    if len(value) >= 4 and "\n" not in value and len(value) <= 80:
                        literals.add(value)
                    strong |= _split_terms(value)[0]
    return Terms(frozenset(strong), frozenset(literals), frozenset(words))


def _scalar_values(node: Any) -> Iterable[str]:
    if isinstance(node, dict):
        for item in node.values():
            yield from _scalar_values(item)
    elif isinstance(node, list | tuple):
        for item in node:
            yield from _scalar_values(item)
    elif isinstance(node, str):
        yield node
    elif isinstance(node, int | float) and not isinstance(node, bool):
        yield str(node)


def _split_terms(text: str) -> tuple[set[str], set[str]]:
    numbers: set[str] = set()
    words: set[str] = set()
    for token in _TOKEN.findall(text):
        lowered = token.lower()
        if lowered[0].isdigit():
            if sum(ch.isdigit() for ch in lowered) >= 3:
                numbers.add(lowered)
        elif len(lowered) >= 3 and lowered not in _STOPWORDS:
            words.add(lowered)
    return numbers, words


def _unit_tokens(unit: Unit) -> set[str]:
    return {t.lower() for t in _TOKEN.findall(unit.text)}


def select(
    parsed: Parsed, selection: Selection, *, tool: str | None, terms: Terms | None, must_keep: Sequence[str] = ()
) -> list[int]:
    """Indices of the units `selection` keeps, in order."""
    units = parsed.units
    keep: set[int] = set(range(min(selection.head, len(units))))
    keep |= set(range(max(0, len(units) - selection.tail), len(units)))
    for unit in units:
        vouched = any(line and (line in unit.value or (unit.value and unit.value in line)) for line in must_keep)
        if vouched or any(rule.matches(unit, tool) for rule in selection.rules):
            keep.add(unit.index)
    if terms is not None:
        keep |= mentioning(
            units,
            terms,
            min_words=selection.min_words,
            top_ratio=selection.top_ratio,
            max_term_share=selection.max_term_share,
            max_word_share=selection.max_word_share,
        )
    return sorted(keep)


def mentioning(
    units: Sequence[Unit],
    terms: Terms,
    *,
    min_words: int,
    top_ratio: float,
    max_term_share: float = 1.0,
    max_word_share: float = 1.0,
) -> set[int]:
    """Units holding a strong term or literal, or at least the threshold of the user's words."""
    tokens = [_unit_tokens(unit) for unit in units]
    lowered = [unit.text.lower() for unit in units]
    if max_term_share < 1.0 or max_word_share < 1.0:
        terms = _distinctive(
            terms,
            units,
            tokens,
            lowered,
            limit=_limit(max_term_share, len(units)),
            word_limit=_limit(max_word_share, len(units)),
        )
    kept: set[int] = set()
    scores: dict[int, int] = {}
    phrases = [t for t in terms.strong if " " in t]
    for unit, unit_tokens, text in zip(units, tokens, lowered, strict=True):
        if unit_tokens & terms.strong or any(p in text for p in phrases) or any(v in unit.text for v in terms.literals):
            kept.add(unit.index)
        else:
            scores[unit.index] = len(unit_tokens & terms.words)
    best = max(scores.values(), default=0)
    threshold = max(min_words, math.ceil(top_ratio * best - 1e-9))
    return kept | {i for i, score in scores.items() if score >= threshold}


def _limit(share: float, units: int) -> float:
    """How many units a term may be found in and still count: a share of them, never less than one (in a
    short result every term is in a large share of the units, and one that is in only one still tells it apart)."""
    return max(1.0, share * units)


def _distinctive(
    terms: Terms,
    units: Sequence[Unit],
    tokens: Sequence[set[str]],
    lowered: Sequence[str],
    *,
    limit: float,
    word_limit: float,
) -> Terms:
    """`terms` without the strong terms and literals found in more than `limit` units (each alone would keep
    nearly every unit) and the words found in more than `word_limit` (they would add to every unit's count)."""

    def units_holding(term: str, *, literal: bool = False) -> int:
        if literal:
            return sum(term in unit.text for unit in units)
        if " " in term:
            return sum(term in text for text in lowered)
        return sum(term in unit_tokens for unit_tokens in tokens)

    # Words have their own limit: one only adds to a unit's count toward `min_words`, it does not keep the
    # unit alone, and filtering them with the terms' share lost needed rows of knowledge-base answers.
    return Terms(
        frozenset(t for t in terms.strong if units_holding(t) <= limit),
        frozenset(v for v in terms.literals if units_holding(v, literal=True) <= limit),
        frozenset(w for w in terms.words if units_holding(w) <= word_limit),
    )


def render(parsed: Parsed, keep: Sequence[int]) -> str:
    """The kept units as text: lines joined, or the JSON with only the kept leaves."""
    kept = [parsed.units[i] for i in keep]
    if not parsed.is_json:
        return "\n".join(u.text for u in kept)
    tree: Any = None
    for unit in kept:
        tree = _insert(tree, parsed.data, unit.path, unit)
    return json.dumps(_finish(tree) if tree is not None else {}, ensure_ascii=parsed.ascii_only)


def needed_units(parsed: Parsed, literals: list[str]) -> list[int]:
    """Units holding a literal, as the tool printed it (JSON-escaped) or as the leaf reads. A literal that
    spans several lines of a split string leaf (a whole file posted as a tweet) keeps the whole leaf.

    What the proposers read to find where a lost fact sat in a result (the rule they derive must keep it)."""
    if not literals:
        return []
    leaves: dict[tuple[tuple[str | int, ...], bool], list[Unit]] = {}
    for unit in parsed.units:
        leaves.setdefault((unit.path, unit.line is not None), []).append(unit)
    keep: set[int] = set()

    def holds(literal: str, texts: tuple[str, ...]) -> bool:
        return any(occurs(literal, text) for text in texts)

    def forms(value: str) -> tuple[str, ...]:
        return value, json.dumps(value, ensure_ascii=parsed.ascii_only)[1:-1]

    # Literal by literal: a short one (a tweet id "1") held by one line must not hide that another one (the
    # whole diff being tweeted) is held only by the leaf as a whole.
    for literal in literals:
        for (_, split), units in leaves.items():
            one_by_one = [u.index for u in units if holds(literal, (*forms(u.value), u.text))]
            if one_by_one:
                keep.update(one_by_one)
            elif split and holds(literal, forms("\n".join(u.value for u in units))):
                keep.update(u.index for u in units)  # only the leaf as a whole holds it
    return sorted(keep)


class _Indexed(dict[int, Any]):
    """A list under construction: its kept elements by original index."""


class _Lines(list[str]):
    """The kept lines of a split string leaf, joined back into one string when rendered."""


def _insert(tree: Any, source: Any, path: tuple[str | int, ...], unit: Unit) -> Any:
    if not path:
        if unit.line is None:
            return source
        lines = tree if isinstance(tree, _Lines) else _Lines()
        lines.append(unit.value)
        return lines
    head, rest = path[0], path[1:]
    if isinstance(source, dict):
        node = tree if isinstance(tree, dict) and not isinstance(tree, _Indexed) else {}
    else:
        node = tree if isinstance(tree, _Indexed) else _Indexed()
    node[head] = _insert(node.get(head), source[head], rest, unit)
    return node


def _finish(node: Any) -> Any:
    if isinstance(node, _Indexed):
        return [_finish(node[i]) for i in sorted(node)]
    if isinstance(node, _Lines):
        return "\n".join(node)
    if isinstance(node, dict):
        return {k: _finish(v) for k, v in node.items()}
    return node
