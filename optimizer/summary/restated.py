"""A restated task: a summary that is the task statement again and holds no result.

LangChain's middleware folds the task message in with the calls and results, and a small summarizer may
copy the part it understands. Under the by-call text, the only summary the 1.5B local summarizer wrote on each of
the five `gift` and `order_fix` validation tasks at tier 1 was the task's numbered plan, one bold line per step,
with no value any call returned: the 1.5B agent began the plan again and failed all five. Facts kept counts such a
summary's losses one fact at a time, like any other loss; this names the mode, so that a table counts it and the
optimizer can be asked about it.

A line restates the task when nearly all of its word triples occur in the task statement (bullets, numbering,
emphasis and escaped markup stripped); a summary restates the task when at least half of its lines of three words
and more do, and none of its tokens with a digit occurs in a result without occurring in the task statement.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable

from optimizer.agent.episode import Episode
from optimizer.context.history import EntryKind
from optimizer.world.needs import occurs

_BULLET = re.compile(r"^\s*(?:[-+*•]|\d+[.)])\s+")
_EMPHASIS = re.compile(r"[*`#>]+")
_WORD = re.compile(r"[\w'-]+")
_WITH_DIGIT = re.compile(r"(?<![\w-])[\w.-]*\d[\w.-]*")
LINE_SHARE = 0.8  # of a line's word triples found in the task statement
SUMMARY_SHARE = 0.5  # of a summary's lines that restate the task


def restated_lines(summary: str, task: str, results: Iterable[str]) -> tuple[str, ...]:
    """The lines of `summary` that restate `task`, when the summary as a whole restates it and carries no value
    that only `results` held; () otherwise."""
    source = _triples(_words(task))
    lines = [(line, _words(line)) for line in (_plain(x) for x in summary.splitlines())]
    lines = [(line, words) for line, words in lines if len(words) >= 3]
    if not lines:
        return ()
    restating = [line for line, words in lines if _share(_triples(words), source) >= LINE_SHARE]
    if len(restating) < SUMMARY_SHARE * len(lines):
        return ()
    given = "\n".join(results)
    plain = html.unescape(summary)
    for token in _WITH_DIGIT.findall(plain):
        token = token.strip(".-")
        if token and occurs(token, given) and not occurs(token, task):
            return ()
    return tuple(restating)


def restated_in(episode: Episode) -> list[tuple[str, ...]]:
    """Per summary an episode's compressor wrote, in order: its lines restating the task, () when it does not;
    the results it is checked against are those the step it was written at could show."""
    entries = episode.entries
    statement = "\n".join(episode.text(e.text) for e in entries if e.kind in (EntryKind.TASK, EntryKind.USER))
    out = []
    for record in episode.records:
        if record.action != "summarize" or not record.compressor_io:
            continue
        results = [episode.text(e.raw) for e in entries if e.kind == EntryKind.RESULT and e.visible_from <= record.step]
        out.append(restated_lines(episode.text(record.compressor_io[1]), statement, results))
    return out


def restating_count(episodes: Iterable[Episode]) -> tuple[int, int]:
    """Summaries the episodes' compressor wrote, and how many of them restate the task."""
    restated = [lines for episode in episodes for lines in restated_in(episode)]
    return len(restated), sum(bool(lines) for lines in restated)


def _plain(line: str) -> str:
    return " ".join(_EMPHASIS.sub("", _BULLET.sub("", html.unescape(line))).split())


def _words(text: str) -> list[str]:
    return _WORD.findall(html.unescape(text).lower())


def _triples(words: list[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + 3]) for i in range(len(words) - 2)}


def _share(part: set[tuple[str, ...]], whole: set[tuple[str, ...]]) -> float:
    return len(part & whole) / len(part) if part else 0.0
