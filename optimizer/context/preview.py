"""Head and tail previews of a long text, cut at a line or word boundary within a token budget.

A cut in mid-word turns `ORD-7731` into `ORD-77` (a wrong id the agent may act on) and `RULE-MID-02` into
a fragment no reader can trust. The budget stays the one given; only the cut moves back inside it: to the
nearest line break when that keeps at least half of the budget's text, else to the nearest space. A text
with no space within the budget (one giant token run: base64, a minified blob) keeps the plain token cut,
because keeping nothing would hide that the text exists.
"""

from __future__ import annotations

import re
from collections import Counter

from optimizer.tokens import last_tokens, truncate_to_tokens

_DIGITS = re.compile(r"\d+")
LABEL_CHARS = 40


def head(text: str, max_tokens: int) -> str:
    """The start of `text` in at most `max_tokens` tokens, ending at a line or word boundary."""
    cut = _common_prefix(truncate_to_tokens(text, max_tokens), text)  # a split character decodes as U+FFFD
    if cut == text or not cut or text[len(cut)] == "\n":
        return cut
    line = cut.rfind("\n")
    if line >= len(cut) // 2:
        return cut[:line].rstrip()
    if text[len(cut)].isspace() or cut[-1].isspace():
        return cut.rstrip()
    space = max(cut.rfind(" "), cut.rfind("\t"), line)
    return cut[:space].rstrip() if space > 0 else cut


def tail(text: str, max_tokens: int) -> str:
    """The end of `text` in at most `max_tokens` tokens, starting at a line or word boundary."""
    cut = _common_suffix(last_tokens(text, max_tokens), text)
    if cut == text or not cut or text[-len(cut) - 1] == "\n":
        return cut
    line = cut.find("\n")
    if 0 <= line <= len(cut) // 2:
        return cut[line + 1 :].lstrip()
    if text[-len(cut) - 1].isspace() or cut[0].isspace():
        return cut.lstrip()
    found = [i for i in (cut.find(" "), cut.find("\t"), line) if i >= 0]
    return cut[min(found) + 1 :].lstrip() if found else cut


def _common_prefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def _common_suffix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    return a[len(a) - n :]


def cut_marker(text: str, shown_head: str, shown_tail: str, max_kinds: int) -> str:
    """The line that stands for what a preview left out of `text`, naming up to `max_kinds` kinds of cut line.

    A bare "preview cut" tells an agent nothing about what recall would give it, and a small model then
    answers from the preview or invents the missing value instead of recalling (seen on `reach_long` at tier 1:
    no recall in any compressed episode). Lines are grouped by their label (the text before a colon, digits
    ignored), the rarest kinds first: a lone `unit price:` line among fifty spec rows is what a reader would
    otherwise not know to ask for.
    """
    start = len(shown_head)
    end = len(text) - len(shown_tail) if shown_tail else len(text)
    lines = [line.strip() for line in text[start:end].splitlines() if line.strip()]
    if max_kinds <= 0 or not lines:
        return "[... preview cut ...]"
    kinds: Counter[str] = Counter()
    first: dict[str, str] = {}
    for line in lines:
        label = _label(line)
        kinds[_DIGITS.sub("#", label)] += 1
        first.setdefault(_DIGITS.sub("#", label), label)
    order = list(first)
    named = sorted(order, key=lambda k: (kinds[k], order.index(k)))[:max_kinds]
    parts = [f'"{first[k]}"' + (f" (+{kinds[k] - 1} alike)" if kinds[k] > 1 else "") for k in order if k in named]
    more = len(order) - len(named)
    tail = f", {more} more kind{'s' if more != 1 else ''}" if more else ""
    return f"[... {len(lines)} line{'s' if len(lines) != 1 else ''} cut, among them {', '.join(parts)}{tail} ...]"


def _label(line: str) -> str:
    colon = line.find(":")
    if 0 < colon <= LABEL_CHARS:
        return line[:colon].strip()
    words = line.split()
    label = " ".join(words[:4])
    return label[:LABEL_CHARS]
