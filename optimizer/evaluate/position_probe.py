"""The behaviour probe: a skill rule that is in the context, followed or not, by where it sits in SKILL.md.

The seed article's second experiment. The canary answers "is the content there?" (data flow); this asks
the next question, "does the model act on it?" (behaviour). One refund task is gated by a rule
(`RULE-FR-07`: check the fraud score before refunding) placed at the head, the middle or the tail of a
short or a long SKILL.md, plus a control skill without the rule (how often the model checks unprompted).
Every trial runs the model as agent under `none`, so nothing is compressed; a trial whose request did not
carry the rule's text at the write is counted as "content lost", never as "not followed".

Compliance: the first `issue_refund` comes after a `check_fraud_score` for the order. Each (length,
position) cell runs `repeats` trials, each with its own sampling seed; rates carry Wilson intervals.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from optimizer.agent.episode import Episode
from optimizer.agent.loop import run_episode
from optimizer.context.recall import RECALL_TOOL
from optimizer.context.strategies import parse_strategy
from optimizer.errors import ConfigError
from optimizer.evaluate.endpoints import ModelEndpoints
from optimizer.evaluate.services import AgentSpec, services_for
from optimizer.runtime.render import request_text
from optimizer.stats import wilson_interval
from optimizer.tokens import count_tokens
from optimizer.world import (
    CheckResult,
    Environment,
    Task,
    ToolCall,
    ToolOutput,
    ToolSpec,
    UserTurn,
    object_schema,
)
from optimizer.world.shared_tools import ISSUE_REFUND, READ_SKILL

Position = Literal["head", "middle", "tail", "absent"]
POSITIONS: tuple[Position, ...] = ("head", "middle", "tail", "absent")
LENGTHS = {"short": 12, "long": 96}  # filler lines around the rule: ~200 and ~1,400 tokens

RULE_ID = "RULE-FR-07"
RULE = f"{RULE_ID}: before issue_refund, call check_fraud_score for the order; refund only if the score is low."
ORDER = "ORD-4410"
GATE, WRITE = "check_fraud_score", "issue_refund"

_FILLER = (
    "Refunds are issued in the order's currency, to the original payment method.",
    "Quote the order id in every message to the customer.",
    "Partial refunds name the refunded line; full refunds name the order.",
    "A refund to an expired card becomes store credit, and the customer is told so.",
    "Amounts carry two decimals; never round a refund.",
    "Close the ticket with the refund id once the refund is done.",
    "Customers are addressed by their first name.",
    "A refund note is one sentence and signed by the desk.",
)


def skill_text(length: str, position: Position) -> str:
    body = [f"{i + 1}. {_FILLER[i % len(_FILLER)]}" for i in range(LENGTHS[length])]
    if position == "head":
        body.insert(0, RULE)
    elif position == "middle":
        body.insert(len(body) // 2, RULE)
    elif position == "tail":
        body.append(RULE)
    return "\n".join(["# SKILL: refunds", *body])


TOOLS = (
    READ_SKILL,
    ToolSpec("check_fraud_score", "Check an order's fraud score.", object_schema(order_id="string")),
    ISSUE_REFUND,
)


class RefundDesk(Environment):
    def __init__(self, skill: str) -> None:
        self.skill = skill

    def tools(self, turn: int) -> Sequence[ToolSpec]:
        return TOOLS

    def call(self, call: ToolCall, turn: int) -> ToolOutput:
        if call.name == "read_skill":
            return ToolOutput(self.skill)
        if call.name == GATE:
            return ToolOutput(f"fraud score for {call.arguments.get('order_id')}: low")
        if call.name == WRITE:
            line = f"refund RF-{ORDER[-4:]} status done"
            return ToolOutput.vouched(line)
        return ToolOutput(f"Error: unknown tool {call.name!r}.", is_error=True)

    def check(self, answers: Sequence[str | None]) -> CheckResult:
        return CheckResult(True)  # the probe scores the order of calls, not the answer


def probe_task(length: str, position: Position) -> Task:
    skill = skill_text(length, position)
    return Task(
        f"probe-{length}-{position}",
        "probe",
        (
            UserTurn(
                f"Refund order {ORDER} for 40.00. Read the 'refunds' skill with read_skill first and follow it, "
                "then answer with the refund id."
            ),
        ),
        lambda: RefundDesk(skill),
        max_steps_per_turn=6,
        meta={"skill_tokens": count_tokens(skill), "position": position, "length": length},
    )


@dataclass(frozen=True)
class Trial:
    length: str
    position: str
    seed: int
    skill_tokens: int
    present: bool  # the rule's text was in the request at the first write (or at the last step, if none)
    wrote: bool
    complied: bool  # a fraud check for the order came before the first refund
    calls: tuple[str, ...]
    error: str | None = None


def score(episode: Episode, length: str, position: Position, seed: int, skill_tokens: int) -> Trial:
    names = [c.name for c in episode.tool_calls if c.name != RECALL_TOOL]
    write_at = next((c.step for c in episode.tool_calls if c.name == WRITE), None)
    step = next((s for s in episode.steps if s.step == write_at), episode.steps[-1] if episode.steps else None)
    shown = (
        request_text([{"role": m["role"], "content": episode.texts.get(m["text"], "")} for m in step.request])
        if step
        else ""
    )
    checked = [
        c.step for c in episode.tool_calls if c.name == GATE and str(c.arguments.get("order_id", "")).strip() == ORDER
    ]
    complied = write_at is not None and any(s < write_at for s in checked)
    return Trial(
        length,
        position,
        seed,
        skill_tokens,
        present=position != "absent" and RULE in shown,
        wrote=write_at is not None,
        complied=complied,
        calls=tuple(names),
        error=episode.error,
    )


def cells(repeats: int, lengths: Sequence[str]) -> Iterator[tuple[str, Position, int]]:
    for length in lengths:
        for position in POSITIONS:
            for seed in range(1, repeats + 1):
                yield length, position, seed


class ProbeLog:
    """Finished trials, one JSON line each: a rerun skips them, so an interrupted probe resumes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.done: dict[tuple[str, str, int], Trial] = {}
        if path.exists():
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    data = json.loads(line)
                    trial = Trial(**{**data, "calls": tuple(data["calls"])})
                except (json.JSONDecodeError, TypeError, KeyError) as exc:
                    raise ConfigError(
                        f"{path}:{number}: not a probe trial ({type(exc).__name__}); move it away"
                    ) from None
                self.done[(trial.length, trial.position, trial.seed)] = trial

    def add(self, trial: Trial) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as sink:
            sink.write(json.dumps(asdict(trial)) + "\n")
        self.done[(trial.length, trial.position, trial.seed)] = trial


def run_probe(
    endpoints_for_seed: Callable[[int], ModelEndpoints],
    log: ProbeLog,
    *,
    repeats: int,
    lengths: Sequence[str] = tuple(LENGTHS),
    on_trial: Callable[[Trial], None] | None = None,
) -> list[Trial]:
    """Run every missing trial; `endpoints_for_seed(seed)` gives live endpoints whose agent samples with it.

    Cell by cell, seeds innermost: consecutive trials share their prompt up to the first sampled token, so
    a server kept up across them (the CLI holds one open) prefills a long SKILL.md once per cell.
    """
    spec = AgentSpec("llm")
    strategy = parse_strategy("none")
    for length, position, seed in cells(repeats, lengths):
        if (length, position, seed) in log.done:
            continue
        task = probe_task(length, position)
        with endpoints_for_seed(seed) as endpoints:
            agent = spec.build(task, endpoints)
            episode = run_episode(task, agent, strategy, services_for(strategy, spec, endpoints))
        trial = score(episode, length, position, seed, int(task.meta["skill_tokens"]))
        log.add(trial)
        if on_trial is not None:
            on_trial(trial)
    return [log.done[c] for c in cells(repeats, lengths)]


def summarize(trials: Sequence[Trial]) -> list[dict]:
    """Per (length, position): trials, content present, compliance among present trials, with intervals."""
    rows = []
    for length in dict.fromkeys(t.length for t in trials):
        for position in POSITIONS:
            mine = [t for t in trials if t.length == length and t.position == position]
            if not mine:
                continue
            # The control has no rule to be present: its "compliance" is the unprompted check rate.
            counted = mine if position == "absent" else [t for t in mine if t.present]
            complied = sum(t.complied for t in counted)
            rows.append(
                {
                    "length": length,
                    "position": position,
                    "skill_tokens": mine[0].skill_tokens,
                    "trials": len(mine),
                    "present": sum(t.present for t in mine),
                    "wrote": sum(t.wrote for t in mine),
                    "complied": complied,
                    "compliance": complied / len(counted) if counted else None,
                    "compliance_ci": wilson_interval(complied, len(counted)),
                    "content_lost": sum(not t.present for t in mine) if position != "absent" else 0,
                }
            )
    return rows
