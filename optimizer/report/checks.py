"""The report's comparisons and verdicts: paired differences over common tasks, and each declared bar.

Part of the typed report (`report.model`); each node carries its own codec, writing the keys `report.json`
has always had.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from optimizer.jsontypes import (
    JSON,
    JSONObject,
    JSONRecord,
    array,
    dict_of,
    flag,
    integer,
    number,
    optional,
    optional_number,
    record,
    text,
)

Interval = tuple[float, float]


def interval(value: JSON) -> Interval:
    low, high = array(value)
    return (number(low), number(high))


optional_interval = optional(interval)


@dataclass(frozen=True)
class Paired:
    """Mean differences chosen − other over the tasks both have, with 95 % bootstrap intervals."""

    tasks: int
    peak_diff: float = 0.0
    peak_diff_ci: Interval = (0.0, 0.0)
    peak_ratio: float | None = None
    success_diff: float = 0.0
    success_diff_ci: Interval = (0.0, 0.0)

    def to_dict(self) -> JSONObject:
        if not self.tasks:
            return {"tasks": 0}
        return {
            "tasks": self.tasks,
            "peak_diff": self.peak_diff,
            "peak_diff_ci": list(self.peak_diff_ci),
            "peak_ratio": self.peak_ratio,
            "success_diff": self.success_diff,
            "success_diff_ci": list(self.success_diff_ci),
        }

    @classmethod
    def from_dict(cls, data: JSONRecord) -> Paired:
        if not data["tasks"]:
            return cls(0)
        return cls(
            tasks=integer(data["tasks"]),
            peak_diff=number(data["peak_diff"]),
            peak_diff_ci=interval(data["peak_diff_ci"]),
            peak_ratio=optional_number(data["peak_ratio"]),
            success_diff=number(data["success_diff"]),
            success_diff_ci=interval(data["success_diff_ci"]),
        )


@dataclass(frozen=True)
class PairedEvidence:
    """The paired interval beside a bar decided on the point estimate."""

    paired_ci: Interval | None
    significant: bool


@dataclass(frozen=True)
class BarCheck:
    """A declared bar on one figure of the chosen guideline (success drop, peak reduction, blocking)."""

    value: float
    bar: float
    passed: bool
    evidence: PairedEvidence | None = None

    def to_dict(self) -> JSONObject:
        out: JSONObject = {"value": self.value, "bar": self.bar, "pass": self.passed}
        if self.evidence is not None:
            ci = self.evidence.paired_ci
            out.update(paired_ci=list(ci) if ci else None, significant=self.evidence.significant)
        return out


@dataclass(frozen=True)
class PeerCheck:
    """The chosen guideline's peak at or below a competitor's (the seed, the best baseline), paired."""

    value: float
    bar: float
    passed: bool
    paired_ci: Interval
    tasks: int
    against: str
    significant: bool
    solves_fewer: Interval | None  # (competitor's success, chosen's) when the competitor solves fewer

    def to_dict(self) -> JSONObject:
        return {
            "value": self.value,
            "bar": self.bar,
            "pass": self.passed,
            "paired_ci": list(self.paired_ci),
            "tasks": self.tasks,
            "against": self.against,
            "significant": self.significant,
            "solves_fewer": list(self.solves_fewer) if self.solves_fewer else None,
        }


Check = BarCheck | PeerCheck


def check_from_dict(data: JSONRecord) -> Check:
    if "against" in data:
        return PeerCheck(
            value=number(data["value"]),
            bar=number(data["bar"]),
            passed=flag(data["pass"]),
            paired_ci=interval(data["paired_ci"]),
            tasks=integer(data["tasks"]),
            against=text(data["against"]),
            significant=flag(data["significant"]),
            solves_fewer=optional_interval(data["solves_fewer"]),
        )
    evidence = (
        PairedEvidence(optional_interval(data["paired_ci"]), flag(data["significant"]))
        if "significant" in data
        else None
    )
    return BarCheck(value=number(data["value"]), bar=number(data["bar"]), passed=flag(data["pass"]), evidence=evidence)


@dataclass(frozen=True)
class TierVerdict:
    """Every declared bar at one tier, and whether all of them pass."""

    suite: str
    checks: Mapping[str, Check]
    passed: bool

    def to_dict(self) -> JSONObject:
        return {"suite": self.suite, "checks": {k: c.to_dict() for k, c in self.checks.items()}, "pass": self.passed}

    @classmethod
    def from_dict(cls, data: JSONRecord) -> TierVerdict:
        checks = {name: check_from_dict(record(c)) for name, c in record(data["checks"]).items()}
        return cls(suite=text(data["suite"]), checks=checks, passed=flag(data["pass"]))


@dataclass(frozen=True)
class Acceptance:
    """The bars declared before the run, and the verdict per tier (`tier0`, `tier1`)."""

    declared: Mapping[str, float]  # the experiment's `[acceptance]` table, as it was when the job ran
    tiers: Mapping[str, TierVerdict]
    passed: bool

    def to_dict(self) -> JSONObject:
        return {
            "declared": dict(self.declared),
            "tiers": {k: v.to_dict() for k, v in self.tiers.items()},
            "pass": self.passed,
        }

    @classmethod
    def from_dict(cls, data: JSONRecord) -> Acceptance:
        return cls(
            declared=dict_of(data["declared"], number),
            tiers={k: TierVerdict.from_dict(record(v)) for k, v in record(data["tiers"]).items()},
            passed=flag(data["pass"]),
        )
