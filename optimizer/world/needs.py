"""Where a call's argument values came from: the user's words, or an earlier tool output.

A value the user never typed but a tool printed (an order id from a listing, a user id from a
lookup) can only be copied from the context. If compression drops the output that carried it, an
agent cannot make the call as written and has to guess. `find_needs` finds those values, so that a
reference step can say what it needs to stay visible. The BFCL adapter and trajectory import share
this one rule; it reads texts only and is deterministic.

Matching. A value is looked for through its renderings: a string as itself and JSON-escaped (tools
JSON-dump their results), an int also as `150.0`, a float also without `.0`, with two decimals, and
(in user texts only) with thousands separators. A match must not continue a longer word or number:
`report.pdf` does not occur in `final_report.pdf`, `150` does not occur in `1500` or `150.5`. User
texts are matched case-insensitively (a user who wrote "john" can type "John"); tool outputs exactly,
since the literal must be visible exactly as the agent will copy it.

Trivial literals are never needs, because seeing them or not says nothing about the context: booleans
and None; values whose text is shorter than `min_len` characters (small integers such as `5` or
`100`, floats such as `2.5`, short words and paths such as `..` or `tmp`); and common words that an
agent picks from the user's intent or the tool's description rather than copies (`Buy`, `high`,
`true`, `none`; see `COMMON_WORDS`).

The guess is what an agent that lost the literal would plausibly send instead: a value of the same
type and shape. First choice is a sibling from the same output (another value under the same JSON
key, such as another file of the listing or another booking id; else one of the same character
shape; else the nearest other number with as many digits); otherwise the literal altered (its last
digit bumped or its last letter changed; a number bumped in its last digit, doubled or halved). A
caller that can run the task passes `accept` to keep only guesses that really break it; such a caller may
also lower `min_len` and keep common words (`skip_common=False`), since a vetted guess shows that the
short value or the common word had to be copied from the output (BFCL does).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from optimizer.world.task import Need, NeedKind, ReferenceStep
from optimizer.world.tool import ToolCall

_COMMON = """
    true false none null yes no all any the and for with from
    buy sell market limit stop open closed close pending completed cancelled active inactive
    high medium low left right front rear lock unlock locked unlocked on off auto
    engaged released pressed start running stopped celsius fahrenheit economy business first
    user admin default name date time text file folder directory
"""
COMMON_WORDS = frozenset(_COMMON.split())

_WORD = "A-Za-z0-9_"
# What `occurs` finds visible, as a version: part of the key of every run whose agent acts on it (tier 0).
NEEDS_MATCHING = 2
Path = tuple[str | int, ...]


def find_needs(
    call: ToolCall,
    *,
    user_texts: Sequence[str],
    tool_outputs: Sequence[str],
    known_texts: Sequence[str] = (),
    min_len: int = 4,
    skip_common: bool = True,
    output_classes: Sequence[str | None] | None = None,
    accept: Callable[[Need], bool] | None = None,
) -> tuple[Need, ...]:
    """VALUE needs of `call`: argument values absent from every user text but present in an output.

    `tool_outputs` are the outputs seen before this call, oldest first. `known_texts` are texts the
    agent always has besides the user's (tool descriptions and schemas: a door name listed there is
    not copied from output); they count like user texts. `output_classes`, when given, holds the
    outputs' retention classes and fills `Need.source_class` from the output the literal first
    appeared in. `accept`, when given, vets each guess (a suite checks that the guessed call really
    fails the task): guesses are tried in order (siblings, then alterations) and a value none of whose
    guesses is accepted is not a need, since losing it cannot change the outcome.
    """
    always = [*user_texts, *known_texts]
    needs: list[Need] = []
    seen: set[tuple[str, str]] = set()
    for argument, value in call.arguments.items():
        for path, leaf in _leaves(value):
            if _trivial(leaf, min_len, skip_common) or _in_any(leaf, always):
                continue
            found = _first_output(leaf, tool_outputs)
            if found is None:
                continue
            literal, index = found
            if (argument, literal) in seen:
                continue
            seen.add((argument, literal))
            source = output_classes[index] if output_classes is not None else None
            for wrong in guesses(leaf, tool_outputs[index], min_len=min_len):
                need = Need(
                    kind=NeedKind.VALUE,
                    literal=literal,
                    argument=argument,
                    guess=_replace(value, path, wrong),
                    source_class=source,
                )
                if accept is None or accept(need):
                    needs.append(need)
                    break
    return tuple(needs)


def guesses(value: Any, output: str, *, min_len: int = 4, siblings: int = 3) -> list[Any]:
    """Plausible wrong values for `value` seen in `output`, best first, all distinct from it.

    The nearest `siblings` values of the same type and shape in the output, then alterations: a
    string with its last digit bumped (or else its last letter changed); a number with its last
    digit bumped, doubled, halved.
    """
    found = _siblings(value, output, min_len)[:siblings]
    for wrong in _alterations(value):
        if wrong != value and wrong not in found:
            found.append(wrong)
    return found


def _in_any(value: Any, texts: Sequence[str]) -> bool:
    return any(occurs(r, text, ignore_case=True) for r in _renderings(value, user=True) for text in texts)


def _leaves(value: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*path, key))
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _leaves(item, (*path, i))
    else:
        yield path, value


def _replace(value: Any, path: Path, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {k: (_replace(v, rest, new) if k == head else v) for k, v in value.items()}
    items = [(_replace(v, rest, new) if i == head else v) for i, v in enumerate(value)]
    return tuple(items) if isinstance(value, tuple) else items


def _text(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def _trivial(value: Any, min_len: int, skip_common: bool = True) -> bool:
    if value is None or isinstance(value, bool) or not isinstance(value, str | int | float):
        return True
    text = _text(value).strip()
    return not text or len(text) < min_len or (skip_common and text.lower() in COMMON_WORDS)


def _renderings(value: Any, *, user: bool = False) -> list[str]:
    if isinstance(value, str):
        escaped = json.dumps(value)[1:-1]
        return [value] if escaped == value else [value, escaped]
    out = [_text(value)]
    if isinstance(value, int):
        out.append(f"{value}.0")
        if user and abs(value) >= 1000:
            out.append(f"{value:,}")
    else:
        if value.is_integer():
            out.append(str(int(value)))
        out.append(f"{value:.2f}")
        if user and abs(value) >= 1000:
            out.append(f"{value:,.2f}")
    return list(dict.fromkeys(out))


def occurs(needle: str, haystack: str, *, ignore_case: bool = False) -> bool:
    """Whether `needle` is visible in `haystack` as a whole token (not inside a longer word or number); a number
    named by its JSON key (`"units_in_stock": 17`) also as the same key and number rewritten (`units_in_stock = 17`)."""
    if not needle:
        return False
    if ignore_case:
        needle, haystack = needle.lower(), haystack.lower()
    if needle in haystack and re.search(_pattern(needle), haystack) is not None:
        return True
    pair = _NUMBER_PAIR.match(needle)
    return pair is not None and _pair_rewritten(pair[1], pair[2], haystack)


# A suite names a short number by its JSON key, since `17` alone occurs anywhere. A summary that rewrote the pair
# (`units_in_stock = 17`, `**units_in_stock**: 17`) still shows that number under that key: read verbatim only,
# the 0.5B summarizer's `units_in_stock = 17` under a text that asks for `name = value` counted as lost at tier 0.
_NUMBER_PAIR = re.compile(r'^"(\w+)": (-?\d+(?:\.\d+)?)$')
_MARKUP = r"[\"'`*]*"


def _pair_rewritten(key: str, number: str, haystack: str) -> bool:
    if key not in haystack or number not in haystack:  # fast path, as for a verbatim needle
        return False
    pattern = rf"(?<![\w]){re.escape(key)}{_MARKUP}\s*[:=]\s*{_MARKUP}{_pattern(number)}"
    return re.search(pattern, haystack) is not None


def _pattern(needle: str) -> str:
    before = f"(?<![{_WORD}])" if re.match(f"[{_WORD}]", needle[0]) else ""
    after = f"(?![{_WORD}])" if re.match(f"[{_WORD}]", needle[-1]) else ""
    if needle[0].isdigit() or needle[0] == "-":
        before = r"(?<![\w.])(?<!\d\.)"  # not the tail of a longer number
    if needle[-1].isdigit():
        after = r"(?![\w])(?!\.\d)"  # not the head of a longer number
    return before + re.escape(needle) + after


def _first_output(value: Any, outputs: Sequence[str]) -> tuple[str, int] | None:
    renderings = _renderings(value)
    for index, text in enumerate(outputs):
        for rendering in renderings:
            if occurs(rendering, text):
                return rendering, index
    return None


def _siblings(value: Any, output: str, min_len: int) -> list[Any]:
    """Other values of `value`'s type in `output`, nearest first.

    Nearest means: found under the same JSON key as `value` (another `booking_id`, another file of
    the listing), then the same character shape, then the closest length (strings) or value (numbers).
    """
    found = _candidates(output, type(value))
    fields = {field for candidate, field in found if candidate == value}
    ranked = []
    for i, (candidate, field) in enumerate(found):
        if candidate == value or _trivial(candidate, min_len):
            continue
        if isinstance(value, str):
            shape_differs = _shape(candidate) != _shape(value)
            if shape_differs and _common_prefix(candidate, value) < 3:
                continue
            distance: float = abs(len(candidate) - len(value))
        else:
            if len(str(int(abs(candidate)))) != len(str(int(abs(value)))):
                continue
            shape_differs, distance = False, abs(candidate - value)
        ranked.append((field not in fields, shape_differs, distance, i, candidate))
    return list(dict.fromkeys(item[-1] for item in sorted(ranked)))


def _candidates(output: str, kind: type) -> list[tuple[Any, str | None]]:
    """Values of type `kind` in an output with the JSON key they sit under, in order.

    Dict keys count as values (of the field `<parent>{}`); a non-JSON output yields plain tokens.
    """
    try:
        parsed = json.loads(output)
    except ValueError:
        number = r"(?<![\d.])-?\d+\.\d+(?![\d.])" if kind is float else r"(?<![\d.])-?\d+(?![\d.])"
        pattern = r"[\w@/-]+(?:\.[\w@/-]+)*" if kind is str else number  # dots only inside a token
        return [(kind(token), None) for token in re.findall(pattern, output)]
    found: list[tuple[Any, str | None]] = []

    def walk(node: Any, field: str | None) -> None:
        if isinstance(node, dict):
            for key, item in node.items():
                if kind is str:
                    found.append((key, f"{field}{{}}"))
                walk(item, key)
        elif isinstance(node, list):
            for item in node:
                walk(item, field)
        elif type(node) is kind:
            found.append((node, field))

    walk(parsed, None)
    return found


def _shape(text: str) -> str:
    """Character classes with runs collapsed: `USR005` -> `A9`, `final_report.pdf` -> `a_a.a`."""
    classes = re.sub(r"[A-Z]", "A", re.sub(r"[a-z]", "a", re.sub(r"\d", "9", text)))
    return re.sub(r"(.)\1+", r"\1", classes)


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def alter_text(literal: str) -> str:
    """A wrong value of the same shape as `literal`, for an agent that must write one it cannot see."""
    return _alterations(literal)[0]


def _alterations(value: Any) -> list[Any]:
    if isinstance(value, int):
        return [value + 1, value * 2, value // 2]
    if isinstance(value, float):
        text = repr(value)
        bumped = float(text[:-1] + str((int(text[-1]) + 1) % 10)) if text[-1].isdigit() else value + 1.0
        return [bumped, value * 2, value / 2]
    for i in range(len(value) - 1, -1, -1):
        if value[i].isdigit():
            return [value[:i] + str((int(value[i]) + 1) % 10) + value[i + 1 :]]
    for i in range(len(value) - 1, -1, -1):
        ch = value[i]
        if ch.isascii() and ch.isalpha():
            base = ord("a") if ch.islower() else ord("A")
            return [value[:i] + chr(base + (ord(ch) - base + 1) % 26) + value[i + 1 :]]
    return [value + "x"]


_WRITTEN_KINDS = (NeedKind.VALUE, NeedKind.RECEIPT)


def written_needs(reference: Sequence[ReferenceStep]) -> list[tuple[Need, ...]]:
    """Each step's needs plus the literals of the task's other VALUE and RECEIPT needs it writes out.

    A reference step whose email body or answer quotes an id the task needed elsewhere needs that id
    too; a suite that declared it only where it first mattered would let the agent quote it for free.
    """
    # Only literals an earlier step needed: a value the agent writes before any output showed it (BFCL's
    # ground truth knows a ticker symbol) is its own, not one it copies.
    known: dict[str, Need] = {}
    out = []
    for step in reference:
        declared = {n.literal for n in step.needs}
        text = _written_text(step)
        implied = tuple(
            Need(NeedKind.VALUE, literal, guess=alter_text(literal), source_class=need.source_class)
            for literal, need in known.items()
            if literal not in declared and occurs(literal, text)
        )
        out.append((*step.needs, *implied))
        known.update((n.literal, n) for n in step.needs if n.kind in _WRITTEN_KINDS and n.literal not in known)
    return out


def _written_text(step: ReferenceStep) -> str:
    if step.call is None:
        return step.answer or ""
    return "\n".join(_strings(step.call.arguments))


def _strings(node: Any) -> list[str]:
    if isinstance(node, Mapping):
        return [s for item in node.values() for s in _strings(item)]
    if isinstance(node, list | tuple):
        return [s for item in node for s in _strings(item)]
    return [node] if isinstance(node, str) else []
