"""A paraphrase move: the optimizer LLM changes a few words of one sentence of the instructions, adding no instruction.

Wording alone moves a small summarizer as far as an instruction does: on 24 `reach_long` train tasks
(`benchmarks/probe_summary_layout.py`, 0.5B summarizer) "short" -> "brief" in one sentence kept 15 of 49 facts
where the text kept 26 (-0.25 per task [-0.42, -0.07]), and "Rewrite" -> "Restate" kept 34 (+0.09 [-0.08, +0.26]);
the effect held on the 18 tasks a 6-task screen never saw. Which words a given summarizer follows is not
something code can write; an LLM can propose them and the screen can judge them. So the move asks about one
sentence, chosen by the kinds of fact the parent's summaries lost (the sentence that protects the most lost facts
first), for versions that change one to three of its words, as those rewordings did: asked for free rewordings, the
1.5B optimizer wrote shorter sentences that said less (of 6 sentences on `reach_long` train, 2 refused by the
checks below and 4 keeping 0.02 to 0.58 fewer facts per task). Code checks that a version is the same instruction:
the same section names in capitals, no kind of fact the sentence named dropped, a prohibition still a prohibition,
no value or number, a length within half to twice the sentence's, and at most three words changed. A kind of fact
newly named is not refused: the words that name kinds are broad ("write" names a receipt, "name" a value), so
"Write down every identifier" would read as a new instruction; the word bound keeps a version from growing into
one.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass

from optimizer.summary.contract_text import closing_part, learned_part, with_contract
from optimizer.summary.rewrite import (
    ID_LIKE,
    KIND_TEXT,
    KIND_WORDS,
    OptimizerLM,
    Proposal,
    kinds_named,
    render,
    reply_lines,
)
from optimizer.summary.sentences import normal, replaced, sentences, spans
from optimizer.untrusted import fence

_SECTION_NAME = r"[A-Z]{2,}(?:\s+[A-Z]{2,})*"  # VARIABLES, ERRORS AND WARNINGS
_SECTION = re.compile(rf"\b{_SECTION_NAME}(?=\s*:)")
# Words that tell the summarizer to leave something out: "Drop X" may become "Do not include X", never "Include X".
_AGAINST = re.compile(
    r"\b(?:never|not|no|none|nothing|without|avoid|drop|omit|leave out|remove|skip|exclude|discard|cut)\b|n't\b",
    re.IGNORECASE,
)
_LABEL = re.compile(rf"^{_SECTION_NAME}:\s*")
_CUE = "Three versions:"
MAX_WORDS_CHANGED = 3


@dataclass(frozen=True)
class SayItOtherwise:
    """A small summarizer model condenses the earlier steps of an AI agent's work, following the instructions
    below. Its summaries still lost the kinds of information listed under `lost`. Change one to three words of the
    sentence shown under `sentence` (a verb, an adjective or a noun) so that a small model follows it more closely,
    and keep every other word as written. Write three different versions, one per line. Keep every instruction the
    sentence gives; add no instruction of your own; name no value, id or number. Each version must still use the
    words listed under `keep`. Reply with the three versions only."""

    lost: str
    instructions: str
    sentence: str
    keep: str


def order(text: str, lost_by_kind: Mapping[str, int]) -> list[tuple[int, int]]:
    """Spans of `text`'s sentences, those naming the kinds of fact lost most often first (a sentence that
    protects what was lost is where other words may help), then the rest in reading order."""

    def weight(span: tuple[int, int]) -> int:
        named = kinds_named(text[span[0] : span[1]], KIND_TEXT)
        return sum(lost_by_kind.get(kind, 0) for kind in named)

    return sorted(spans(text), key=lambda s: -weight(s))


def paraphrase_step(lm: OptimizerLM, parent: str, lost_by_kind: Mapping[str, int], *, index: int = 0) -> Proposal:
    """The `index`-th sentence of `parent`'s learned part in `order`, said otherwise; the text is the parent's
    when the reply is refused (with its reason)."""
    base = learned_part(parent)
    candidates = order(base, lost_by_kind)
    if not candidates:
        return Proposal("paraphrase", parent, (), [("", "no sentence to rewrite")])
    span = candidates[index % len(candidates)]
    sentence = normal(base[span[0] : span[1]])
    # A section's name is code's to keep, as the contract is: the optimizer rewords what follows it (asked with
    # the name, the 1.5B optimizer renamed VARIABLES in each of its three rewordings).
    label = _label(sentence)
    lost = "\n".join(f"- {KIND_TEXT.get(k, k)}: {n} fact(s)" for k, n in lost_by_kind.items() if n) or "- nothing"
    shown = sentence.removeprefix(label)
    question = SayItOtherwise(lost, fence(base, "instructions"), fence(shown, "sentence"), ", ".join(anchors(shown)))
    reply = lm(render(question, _CUE), 0.7)
    present = sentences(f"{base}\n\n{closing_part(parent)}")
    refused: list[tuple[str, str]] = []
    for said in _rewordings(reply):
        said = said if said.startswith(label) else f"{label}{said}"
        reason = refusal(said, sentence, present)
        if reason is None:
            text = with_contract(replaced(base, span, said), closing_part(parent))
            return Proposal("paraphrase", text, (said,), refused, reply=reply, replaces=sentence)
        refused.append((said, reason))
    refused = refused or [(reply.strip()[:80], "empty reply")]
    return Proposal("paraphrase", parent, (), refused, reply=reply, replaces=sentence)


def anchors(sentence: str) -> list[str]:
    """The sentence's words that the checks read: those naming a kind of fact it protects, and the first word that
    forbids something. The optimizer is told them up front: unprompted, the 1.5B optimizer's rewordings dropped
    "each with its id" and "so that none is repeated", and all were refused."""
    words = re.findall(r"[A-Za-z']+", sentence)
    kind_words = {k for kind in KIND_TEXT for k in KIND_WORDS.get(kind, ())}
    kinds = [w for w in words if w.lower() in kind_words or w.lower().removesuffix("s") in kind_words]
    kinds = [w for i, w in enumerate(kinds) if w.removesuffix("s") not in kinds[:i]]
    against = _AGAINST.search(sentence)
    return list(dict.fromkeys([*kinds, *([against.group(0)] if against else [])]))


def _label(sentence: str) -> str:
    """A section line's name and colon with the space after it (`VARIABLES: `), or ""."""
    found = _LABEL.match(sentence)
    return found.group(0) if found else ""


def _rewordings(reply: str) -> list[str]:
    """The reply's lines, the cue, a numbering or quotes around each taken off (the first that passes is used: a
    1.5B optimizer asked for one version echoed the sentence as it was in three of three questions)."""
    out = []
    for line in reply_lines(reply):
        line = normal(line.removeprefix(_CUE).strip().strip("\"'“”").strip())
        if line and line not in out:
            out.append(line)
    return out[:3]


def refusal(new: str, old: str, present: list[str]) -> str | None:
    """Why `new` is not `old` said otherwise (None when it is)."""
    if new == old:
        return "the sentence as it was"
    if new in present:
        return "already in the instructions"
    if ID_LIKE.search(new) or set(re.findall(r"\d+", new)) - set(re.findall(r"\d+", old)):
        return "names a value or number"
    if set(_SECTION.findall(new)) != set(_SECTION.findall(old)):
        return "changes a section name"
    dropped = kinds_named(old, KIND_TEXT) - kinds_named(new, KIND_TEXT)
    if dropped:
        return f"drops a kind of fact the sentence protected ({', '.join(sorted(dropped))})"
    if bool(_AGAINST.search(new)) != bool(_AGAINST.search(old)):
        return "turns a prohibition into an instruction, or one into the other"
    words, before = len(new.split()), len(old.split())
    if words > 2 * before + 4:
        return f"adds to the sentence ({words} words for {before})"
    if words < before / 2:
        return f"cuts the sentence to under half ({words} words for {before})"
    changed = words_changed(new, old)
    if not changed:  # "Every" for "every", a comma: the 0.5B summarizer kept fewer facts on 6 tasks for both
        return "changes no word (case or punctuation only)"
    if changed > MAX_WORDS_CHANGED:
        return f"changes {changed} words (at most {MAX_WORDS_CHANGED})"
    return None


def words_changed(new: str, old: str) -> int:
    """Words replaced, added or removed between two sentences (case and punctuation aside)."""
    a, b = re.findall(r"[\w'-]+", old.lower()), re.findall(r"[\w'-]+", new.lower())
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in ops if tag != "equal")
