"""Cheap screening: what a candidate's summaries keep of what the task still needs, before any agent runs.

The task's reference solution is replayed through the target strategy (the trajectory full context
takes; no agent model), and each summary is scored against the literals later reference steps need
that were in what it folded: a value, a receipt id, an error, a paging warning by its literal, a skill
rule only when its whole line is there verbatim (a paraphrased rule is how rules get lost). Each summary's
loops, false claims of progress, invented values and restated tasks are counted beside (`repeated`,
`optimizer.summary.claims`, `optimizer.summary.invented`, `optimizer.summary.restated`). Summaries go
through the cached summarizer call, so tier 0 on the same trajectory then costs nothing more.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from optimizer.agent.llm import FINISH
from optimizer.context.compressor import Compressor
from optimizer.context.history import Entry, EntryKind
from optimizer.context.moves.base import current_summary
from optimizer.context.strategies.base import ContextStrategy
from optimizer.runtime import ContextRuntime
from optimizer.stats import paired_bootstrap_diff, said_interval
from optimizer.summary.claims import false_claims
from optimizer.summary.invented import invented_values, lines_with
from optimizer.summary.restated import restated_lines
from optimizer.tokens import count_tokens
from optimizer.world.needs import occurs
from optimizer.world.task import Need, NeedKind, ReferenceStep, Task


@dataclass(frozen=True)
class LostFact:
    """A needed literal a summary folded in and did not keep: the feedback the optimizer reads."""

    task_id: str
    step: int
    kind: str  # the need's kind: value, rule, receipt, page, error
    literal: str
    source_class: str  # retention class of the result it came from
    source: str  # the line of that result that held it
    summary: str
    source_call: str = ""  # the call whose result held it, as the agent made it: `get_product({"sku": ...})`


@dataclass(frozen=True)
class SummaryScore:
    task_id: str
    step: int
    needed: int
    kept: int
    tokens: int
    lost: tuple[LostFact, ...] = ()
    # The sentence the summary says over and over ("" when none): a small summarizer at temperature 0 can
    # repeat one until its cap, or under each section; whatever else it lost, it spent its length on nothing.
    repeated: str = ""
    # Sentences saying a step was done that the agent had not done yet (`optimizer.summary.claims`).
    claims: tuple[str, ...] = ()
    # Ids and amounts the summary states that no message of the history holds, and the lines stating them.
    invented: tuple[str, ...] = ()
    invented_lines: tuple[str, ...] = ()
    # The lines restating the task, when the summary is the task statement again with no result in it.
    restated: tuple[str, ...] = ()

    @property
    def looped(self) -> bool:
        return bool(self.repeated)


@dataclass(frozen=True)
class TaskScreen:
    task_id: str
    summaries: tuple[SummaryScore, ...]
    # Reference steps whose every needed literal was in the context the agent would have been sent.
    steps_visible: int
    steps: int
    peak_tokens: int

    @property
    def all_visible(self) -> bool:
        return self.steps_visible == self.steps


@dataclass(frozen=True)
class Gain:
    tasks: int
    mean: float
    low: float
    high: float

    def __str__(self) -> str:
        return f"{said_interval(self.mean, self.low, self.high)} over {self.tasks} task(s)"


@dataclass(frozen=True)
class ScreenResult:
    tasks: tuple[TaskScreen, ...]
    lost_by_kind: dict[str, int] = field(default_factory=dict)

    @property
    def summaries(self) -> list[SummaryScore]:
        return [s for t in self.tasks for s in t.summaries]

    @property
    def needed(self) -> int:
        return sum(s.needed for s in self.summaries)

    @property
    def kept(self) -> int:
        return sum(s.kept for s in self.summaries)

    @property
    def kept_share(self) -> float:
        """Facts kept over facts the summaries were responsible for (1.0 when none were)."""
        return self.kept / self.needed if self.needed else 1.0

    def kept_by_task(self) -> dict[str, float]:
        """Per task: facts its summaries kept over facts they folded (1.0 when they folded none): what a paired
        comparison of two texts resamples. A task screened more than once (one sampling seed each) pools its
        summaries, so the pair stays one task and its share is the mean over the draws."""
        return {task_id: kept / needed if needed else 1.0 for task_id, (kept, needed) in self.counts_by_task().items()}

    def counts_by_task(self) -> dict[str, tuple[int, int]]:
        """Per task: facts its summaries kept and facts they folded, pooled over the task's screens."""
        out: dict[str, tuple[int, int]] = {}
        for task in self.tasks:
            kept, needed = out.get(task.task_id, (0, 0))
            out[task.task_id] = (
                kept + sum(s.kept for s in task.summaries),
                needed + sum(s.needed for s in task.summaries),
            )
        return out

    def gain_over(self, parent: ScreenResult) -> Gain:
        """This text's per-task share of facts kept minus `parent`'s, over the tasks both screened, with its
        paired bootstrap interval: a rewording moves the count on a few tasks by chance alone."""
        mine, theirs = self.kept_by_task(), parent.kept_by_task()
        ids = [i for i in theirs if i in mine]
        mean, low, high = paired_bootstrap_diff([mine[i] for i in ids], [theirs[i] for i in ids])
        return Gain(len(ids), mean, low, high)

    @property
    def visible_share(self) -> float:
        return sum(t.all_visible for t in self.tasks) / len(self.tasks) if self.tasks else 0.0

    @property
    def summary_tokens(self) -> float:
        s = self.summaries
        return sum(x.tokens for x in s) / len(s) if s else 0.0

    @property
    def lost(self) -> list[LostFact]:
        return [f for s in self.summaries for f in s.lost]

    @property
    def looped(self) -> int:
        return len(self.repeats)

    @property
    def repeats(self) -> list[str]:
        return [s.repeated for s in self.summaries if s.repeated]

    @property
    def claimed(self) -> int:
        """Summaries with a false claim of progress."""
        return sum(bool(s.claims) for s in self.summaries)

    @property
    def claims(self) -> list[str]:
        return [c for s in self.summaries for c in s.claims]

    @property
    def inventing(self) -> int:
        """Summaries stating a value no message held."""
        return sum(bool(s.invented) for s in self.summaries)

    @property
    def restating(self) -> int:
        """Summaries that are the task statement again, holding no result."""
        return sum(bool(s.restated) for s in self.summaries)

    @property
    def restated_lines(self) -> list[str]:
        return [line for s in self.summaries for line in s.restated]

    @property
    def back_to_back(self) -> int:
        """Summaries made at the step right after another summary: what the target kept after a summary already
        reached its trigger, so it summarizes on every call from there (LangChain keeping 4 messages of 1,000-token
        product sheets under a 2,000-token trigger; keeping 2 did not stop it for the real agent, whose repeated reads
        tier 0 does not make). The knobs' fault, not the text's: no instruction stops it."""
        return sum(b.step == a.step + 1 for t in self.tasks for a, b in pairwise(t.summaries))

    @property
    def misleading(self) -> int:
        """Faults a real agent may act on, counted per summary and kind: a false claim of progress, a value no
        message held. Per kind, so that a text curing one of two faults is better (the 1.5B summarizer invented
        values in 7 of 8 train summaries under the seed's sections, and a line that cut its false claims from 3
        to 1 counted for nothing when both were one tally)."""
        return self.claimed + self.inventing

    @property
    def invented_lines(self) -> list[str]:
        return [line for s in self.summaries for line in s.invented_lines]


def screen(
    strategy: ContextStrategy, tasks: Sequence[Task], compressor: Compressor | Sequence[Compressor]
) -> ScreenResult:
    """`strategy`'s summaries of each task's histories, scored. Several compressors (one sampling seed each) screen
    every task once per draw and pool it: at temperature 0 a text's count is one decoding path, which a one-word
    rewording can switch for every history at once (`benchmarks/README.md`, "Sampled, the rewording's effect is
    gone on these tasks")."""
    draws = [compressor] if isinstance(compressor, Compressor) else list(compressor)
    if not draws:
        raise ValueError("screen needs at least one compressor")
    results = tuple(screen_task(strategy, task, c) for c in draws for task in tasks)
    kinds = Counter(f.kind for t in results for s in t.summaries for f in s.lost)
    return ScreenResult(results, dict(kinds))


def screen_task(strategy: ContextStrategy, task: Task, compressor: Compressor) -> TaskScreen:
    reference = task.reference or ()
    runtime = ContextRuntime(strategy, compressor=compressor)
    runtime.start(task.instruction)
    env = task.make_env()
    turn, visible, peak = 0, 0, 0
    scores: list[SummaryScore] = []
    try:
        for index, step in enumerate(reference):
            while step.turn > turn:
                turn += 1
                runtime.add_user(task.turns[turn].content)
            prepared = runtime.prepare("", native_tools=True)
            view = prepared.replayed
            peak = max(peak, sum(e.tokens for e in view))
            if any(r.action == "summarize" for r in prepared.records):
                scores.append(_score(task, index, runtime.history.entries, runtime, _not_called(reference, index)))
            shown = "\n".join(e.content for e in view)
            visible += all(occurs(n.literal, shown) for n in step.needs)
            if step.call is None:
                runtime.add_action(answer=step.answer or "")
                continue
            runtime.add_action(calls=(step.call,))
            spec = {s.name: s for s in env.tools(turn)}.get(step.call.name)
            runtime.add_result(step.call, env.call(step.call, turn), spec)
    finally:
        env.close()
    return TaskScreen(task.id, tuple(scores), visible, len(reference), peak)


def _not_called(reference: Sequence[ReferenceStep], index: int) -> set[str]:
    """Tools the solution calls from step `index` on and has not called before it (the answer is `finish`)."""
    done = {s.call.name for s in reference[:index] if s.call is not None}
    ahead = {s.call.name if s.call is not None else FINISH for s in reference[index:]}
    return ahead - done


def _score(
    task: Task, index: int, entries: Sequence[Entry], runtime: ContextRuntime, not_called: set[str]
) -> SummaryScore:
    summary = current_summary(runtime.history)
    assert summary is not None
    folded = [entries[i] for i in summary.entry_ids if entries[i].kind is EntryKind.RESULT]
    needs = _responsible(task, index, folded)
    kept, lost = 0, []
    for need in needs:
        source = next(e for e in folded if occurs(need.literal, e.content))
        line = _line(source.content, need.literal)
        if _kept(need, line, summary.summary):
            kept += 1
            continue
        lost.append(
            LostFact(
                task.id,
                index,
                need.kind.value,
                need.literal,
                str(source.retention or "unknown"),
                line,
                summary.summary,
                source.call.signature() if source.call is not None else "",
            )
        )
    invented = invented_values(summary.summary, (e.content for e in entries))
    statement = "\n".join(e.content for e in entries if e.kind in (EntryKind.TASK, EntryKind.USER))
    return SummaryScore(
        task.id,
        index,
        len(needs),
        kept,
        count_tokens(summary.summary),
        tuple(lost),
        repeated(summary.summary, "\n".join(entries[i].content for i in summary.entry_ids)),
        false_claims(summary.summary, not_called),
        invented,
        lines_with(summary.summary, invented),
        restated_lines(summary.summary, statement, (e.content for e in entries if e.kind is EntryKind.RESULT)),
    )


def _responsible(task: Task, index: int, folded: Sequence[Entry]) -> list[Need]:
    """Needs of this and later steps whose literal only a folded result showed (not the task statement)."""
    seen: dict[tuple[str, str], Need] = {}
    for step in (task.reference or ())[index:]:
        for need in step.needs:
            if occurs(need.literal, task.instruction):
                continue
            if any(occurs(need.literal, e.content) for e in folded):
                seen.setdefault((need.kind.value, need.literal), need)
    return list(seen.values())


LOOP_REPEATS = 3
LOOP_MIN_WORDS = 6


def repeated(summary: str, source: str = "") -> str:
    """The sentence of at least six words said most often, if three times or more and more often than `source`
    (what the summary folded) says it ("" otherwise): a degenerate loop. Not a list (its items differ in their
    values), nor lines copied from a tool result that repeats a sentence itself."""
    said, given = _sentences(summary), _sentences(source)
    looping = [
        (n, s) for s, n in said.items() if n >= LOOP_REPEATS and n > given[s] and len(s.split()) >= LOOP_MIN_WORDS
    ]
    return max(looping)[1] if looping else ""


def _sentences(text: str) -> Counter[str]:
    return Counter(" ".join(s.split()) for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip())


def _line(text: str, literal: str) -> str:
    return next((line.strip() for line in text.splitlines() if occurs(literal, line)), literal)


def _kept(need: Need, line: str, summary: str) -> bool:
    if need.kind is NeedKind.RULE:
        return " ".join(line.split()) in " ".join(summary.split())
    return occurs(need.literal, summary)
