"""The summary-instruction job's report: the learned text beside the seed's and the target's default.

A typed record of what the job measured, with two renderers (`to_dict` for report.json, `markdown` for
report.md; the CLI draws its table from the same rows). Every row ran the same test tasks with the same
summarizer model: facts kept per summary (the screen), success at tier 0 (and tier 1 where asked), summary
tokens and mean peak. The search's part is reported as it happened: the lines the optimizer wrote that
survived selection, and every line it wrote that was refused, with the reason.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from optimizer.evaluate.failure_causes import causes_said
from optimizer.evaluate.scores import Scores
from optimizer.jsontypes import JSON, JSONObject
from optimizer.report.file import SUMMARY_KIND
from optimizer.report.markdown import task_count
from optimizer.report.model import TIER0_LIMITS
from optimizer.stats import paired_bootstrap_diff, said_gap, wilson_interval
from optimizer.summary.knobs import TriggerChoice, equal_peak, equal_peak_said
from optimizer.summary.screen import ScreenResult
from optimizer.summary.search import SearchRecord

# The rows `learned` is paired against (and the default at other triggers, `default@T`: the user's own when the job
# chose another, and `default_triggers`).
BASELINES = ("default", "seed")
# Raise it whenever a key of report.json changes meaning or goes away (adding one does not break a reader).
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class TextRow:
    """One instruction text under the target (or `none`, no compression) on the test tasks."""

    name: str
    text: str | None  # None: no instructions given (the target's default when it has no local text; `none`)
    version: str | None
    screen: ScreenResult | None  # None for `none`: it never summarizes
    tier0: Scores
    tier1: Scores | None = None

    @property
    def tier0_ci(self) -> tuple[float, float]:
        """The 95 % Wilson interval of the tier-0 success."""
        return wilson_interval(sum(t.success for t in self.tier0.tasks), self.tier0.n)

    def per_summary(self) -> float | None:
        if self.screen is None:
            return None
        shares = [s.kept / s.needed for s in self.screen.summaries if s.needed]
        return statistics.mean(shares) if shares else None

    def kept_by_task(self) -> dict[str, float]:
        """Per task: facts its summaries kept over facts they folded (`ScreenResult.kept_by_task`)."""
        return self.screen.kept_by_task() if self.screen is not None else {}

    def to_dict(self) -> JSONObject:
        data: JSONObject = {
            "row": self.name,
            "version": self.version,
            "text": self.text,
            "tier0_tasks": self.tier0.n,
            "tier0_success": self.tier0.success,
            "tier0_success_ci": list(self.tier0_ci),
            "peak_mean": self.tier0.peak_mean,
        }
        if self.screen is not None:
            data |= {
                "summaries": len(self.screen.summaries),
                "facts_needed": self.screen.needed,
                "facts_kept": self.screen.kept,
                "facts_kept_share": self.screen.kept_share,
                "facts_kept_per_summary": self.per_summary(),
                "summary_tokens_mean": self.screen.summary_tokens,
                "summaries_looped": self.screen.looped,
                "summaries_claiming": self.screen.claimed,
                "summaries_inventing": self.screen.inventing,
                "summaries_restating": self.screen.restating,
                "summaries_back_to_back": self.screen.back_to_back,
                "lost_by_kind": self.screen.lost_by_kind,
            }
        if self.tier1 is not None:
            data |= {
                "tier1_tasks": self.tier1.distinct_tasks,
                "tier1_episodes": self.tier1.n,
                "tier1_success": self.tier1.success,
                "tier1_peak_mean": self.tier1.peak_mean,
                "tier1_failures": self.tier1.failure_causes(),
            }
        return data


@dataclass(frozen=True)
class Refusal:
    candidate: str
    line: str
    reason: str


@dataclass(frozen=True)
class SummaryReport:
    experiment: str
    suite: str
    target: str
    knobs: Mapping[str, JSON]
    default_source: str
    default_note: str
    tasks: dict[str, int]  # train (mined), val (chosen on), test
    chosen_on: str  # "val", or "train" when there are no validation tasks
    rows: tuple[TextRow, ...]
    search: SearchRecord
    artifact: str  # the learned guideline file
    optimizer: dict[str, int] = field(default_factory=dict)  # calls, cache hits, tokens
    notes: tuple[str, ...] = ()
    trigger: TriggerChoice | None = None  # the trigger chosen beside the text, when the job had choices

    def row(self, name: str) -> TextRow:
        return next(r for r in self.rows if r.name == name)

    @property
    def llm_parts(self) -> tuple[str, ...]:
        """Lines of the chosen text the optimizer wrote (none when the seed with the contract won)."""
        return self.search.best().llm_lines

    @property
    def refused(self) -> list[Refusal]:
        return [Refusal(a.candidate, line, why) for a in self.search.attempts for line, why in a.proposal.refused]

    def paired(self) -> dict[str, dict[str, dict[str, float]]]:
        """Learned minus each baseline, per task, with bootstrap intervals: facts kept and tier-0 success, and
        tier-1 success when both rows ran the real agent."""
        learned = self.row("learned")
        out = {}
        asked = [r.name for r in self.rows if r.name.startswith("default@")]  # the default at the user's trigger
        for name in (*BASELINES, *asked):
            other = self.row(name)
            out[f"learned-{name}"] = {
                "facts_kept": _paired_by_task(learned.kept_by_task(), other.kept_by_task()),
                "tier0_success": _paired_by_task(learned.tier0.success_by_task(), other.tier0.success_by_task()),
            }
            if learned.tier1 is not None and other.tier1 is not None:
                out[f"learned-{name}"]["tier1_success"] = _paired_by_task(
                    learned.tier1.success_by_task(), other.tier1.success_by_task()
                )
        return out

    def equal_peak(self) -> dict[str, str | None]:
        """Per tier, the default row (`default` or `default@T`) that peaks least while peaking at least as high as
        the learned text (`optimizer.summary.knobs.equal_peak`); tier 1 only when the learned row ran it."""
        learned = self.row("learned")
        out = {}
        for tier in ("tier0", "tier1"):
            mine = _at(learned, tier)
            if mine is not None:
                defaults = {r.name: _at(r, tier) for r in self.rows if r.name.split("@")[0] == "default"}
                peaks = {name: s.peak_mean for name, s in defaults.items() if s is not None}
                out[tier] = equal_peak(peaks, mine.peak_mean)
        return out

    def equal_peak_lines(self) -> list[str]:
        learned, paired = self.row("learned"), self.paired()
        lines = []
        for tier, name in self.equal_peak().items():
            mine = _at(learned, tier)
            if mine is None:  # equal_peak() names only the tiers the learned row ran
                continue
            other = _at(self.row(name), tier) if name is not None else None
            gap = paired.get(f"learned-{name}", {}).get(f"{tier}_success")
            said = equal_peak_said(
                (mine.success, mine.peak_mean), name, (other.success, other.peak_mean) if other else None, gap
            )
            lines.append(f"- {tier.replace('tier', 'tier ')}: {said}")
        return lines

    def failure_lines(self) -> list[str]:
        """Per row that ran the real agent: its failed tier-1 episodes by cause ("learned: step limit 4, ...")."""
        return [f"{r.name}: {causes_said(r.tier1.failure_causes())}" for r in self.rows if r.tier1 is not None]

    def to_dict(self) -> JSONObject:
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": SUMMARY_KIND,
            "experiment": self.experiment,
            "suite": self.suite,
            "target": self.target,
            "knobs": self.knobs,
            "default_source": self.default_source,
            "default_note": self.default_note,
            "tasks": self.tasks,
            "chosen_on": self.chosen_on,
            "chosen": self.search.chosen,
            "artifact": self.artifact,
            "rows": [r.to_dict() for r in self.rows],
            "paired": self.paired(),
            "equal_peak": self.equal_peak(),
            "llm_parts": list(self.llm_parts),
            "refused": [{"candidate": r.candidate, "line": r.line, "reason": r.reason} for r in self.refused],
            "search": self.search.to_dict(),
            "optimizer": self.optimizer,
            "notes": list(self.notes),
            "trigger": self.trigger.to_dict() if self.trigger is not None else None,
        }

    def paraphrase_lines(self) -> list[str]:
        """Each sentence the optimizer said otherwise, beside the sentence it replaced (none when it tried none)."""
        tried = [a for a in self.search.attempts if a.proposal.replaces]
        if not tried:
            return []
        return ["", f"Sentences the optimizer said otherwise ({len(tried)}):", ""] + [
            f'- {a.candidate}: "{a.proposal.replaces}" -> "{" ".join(a.proposal.llm_lines) or "(refused)"}": '
            f"{a.verdict}"
            for a in tried
        ]

    def _candidate_table(self) -> list[str]:
        """Every start and candidate the search screened, with what became of it."""
        lines = ["| candidate | parent | train facts kept | val facts kept | verdict |", "|---|---|---|---|---|"]
        verdicts = {a.candidate: a.verdict for a in self.search.attempts}
        start = self.search.start
        for c in self.search.candidates:
            if c.parent is None:
                verdicts[c.name] = "start" if c.name == start else f"start, not taken: {start} ranked higher on train"
            lines.append(
                f"| {c.name} | {c.parent or '–'} | {_share(c.train)} | {_share(c.val)} | "
                f"{verdicts.get(c.name, 'start')} |"
            )
        for a in self.search.attempts:
            if a.candidate not in {c.name for c in self.search.candidates}:
                lines.append(f"| {a.candidate} | – | – | – | {a.verdict} |")
        return lines

    def markdown(self) -> str:
        test, tier1 = self.tasks["test"], any(r.tier1 for r in self.rows)
        lines = [
            f"# Summary instructions for the {self.target} target: {self.experiment}",
            "",
            f"Suite `{self.suite}`; knobs {_knobs(self.knobs)}; learned on {self.tasks['train']} train tasks, "
            f"chosen on {self.tasks['val'] if self.chosen_on == 'val' else self.tasks['train']} "
            f"{'validation' if self.chosen_on == 'val' else 'train (no validation tasks)'} tasks; every row below "
            f"on the same {test} test tasks with the same summarizer.",
            "",
            *([f"Knobs chosen beside the text: {self.trigger.describe()}.", ""] if self.trigger is not None else []),
            "| row | version | facts kept | per summary | false claims | invented values | restated task "
            "| summary tokens | tier-0 success | 95% CI | mean peak |" + (" tier-1 success |" if tier1 else ""),
            "|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if tier1 else ""),
        ]
        for r in self.rows:
            low, high = r.tier0_ci
            cells = [
                r.name,
                r.version or "–",
                f"{r.screen.kept}/{r.screen.needed}" if r.screen else "–",
                _num(r.per_summary(), ".2f"),
                f"{r.screen.claimed} of {len(r.screen.summaries)}" if r.screen else "–",
                f"{r.screen.inventing} of {len(r.screen.summaries)}" if r.screen else "–",
                f"{r.screen.restating} of {len(r.screen.summaries)}" if r.screen else "–",
                _num(r.screen.summary_tokens if r.screen else None, ".0f"),
                f"{r.tier0.success:.2f}",
                f"[{low:.2f}, {high:.2f}]",
                f"{r.tier0.peak_mean:,.0f}",
            ]
            if tier1:
                cells.append(
                    f"{r.tier1.success:.2f} ({task_count(r.tier1.distinct_tasks, r.tier1.n)})" if r.tier1 else "–"
                )
            lines.append("| " + " | ".join(cells) + " |")
        if tier1:
            lines += ["", "Failed tier-1 episodes showing each cause (an episode may show several):", ""]
            lines += [f"- {line}" for line in self.failure_lines()]
        lines += ["", "Paired over tasks (learned minus baseline, mean [95% interval]):", ""]
        labels = {"facts_kept": "facts kept", "tier0_success": "tier-0 success", "tier1_success": "tier-1 success"}
        for name, p in self.paired().items():
            said = [f"{labels[k]} {said_gap(d)}" for k, d in p.items()]
            lines.append(f"- {name}: {', '.join(said)}")
        lines += [
            "",
            "At equal peak (the default row that peaks least while at least as high as learned):",
            "",
            *self.equal_peak_lines(),
            "",
            f"The default row: {self.default_source}" + (f"; {self.default_note}" if self.default_note else "") + ".",
            "",
            "## What the optimizer wrote",
            "",
            f"Chosen: `{self.search.chosen}` ({self.artifact}). Lines of it the optimizer wrote that survived "
            f"selection: {len(self.llm_parts)}.",
            "",
            *(f"- {line}" for line in self.llm_parts),
            "",
            *self._candidate_table(),
        ]
        refused = self.refused
        lines += ["", f"Refused lines ({len(refused)}):", ""]
        lines += [f'- {r.candidate}: "{r.line}" ({r.reason})' for r in refused] or ["- none"]
        lines += self.paraphrase_lines()
        lines += ["", "## The texts", ""]
        for name in ("learned", "seed", "default"):
            text = self.row(name).text
            shown = text if text is not None else f"(none given: {self.default_note or 'the target default'})"
            lines += [f"### {name}", "", "```text", shown.strip(), "```", ""]
        calls = self.optimizer
        lines += [
            f"Optimizer calls: {calls.get('calls', 0)} made, {calls.get('cache_hits', 0)} from the reply cache, "
            f"{calls.get('tokens', 0):,} tokens.",
            "",
            "Tier 0 (the reference agent) does not model: " + "; ".join(TIER0_LIMITS) + ".",
        ]
        lines += [f"Note: {n}" for n in self.notes]
        return "\n".join(lines) + "\n"


def _at(row: TextRow, tier: str) -> Scores | None:
    return row.tier0 if tier == "tier0" else row.tier1


def _paired_by_task(a: Mapping[str, float], b: Mapping[str, float]) -> dict[str, float]:
    """`a` minus `b` over the tasks both have."""
    shared = [k for k in a if k in b]
    return _diff([a[k] for k in shared], [b[k] for k in shared])


def _diff(a: Sequence[float], b: Sequence[float]) -> dict[str, float]:
    if not a:
        return {"mean": 0.0, "low": 0.0, "high": 0.0, "tasks": 0}
    mean, low, high = paired_bootstrap_diff(list(a), list(b))
    return {"mean": mean, "low": low, "high": high, "tasks": len(a)}


def _num(value: float | None, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def _share(s: ScreenResult | None) -> str:
    return "–" if s is None else f"{s.kept}/{s.needed}"


def _knobs(knobs: Mapping[str, JSON]) -> str:
    return ", ".join(f"{k} = {v}" for k, v in knobs.items()) or "none"
