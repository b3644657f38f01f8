"""The optimizer's LLM calls as typed DSPy programs: diagnose a pair, propose (UT), shorten (CO).

Every input that carries tool output or agent history is fenced as untrusted data, and each
signature says so. Replies the model cannot format are recorded as failed proposals, never raised.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import dspy

from optimizer.context.contract import summary_rules
from optimizer.context.guideline import Guideline, RetentionPolicy
from optimizer.llm.client import ChatClient
from optimizer.mining.provenance import PairDiff
from optimizer.mining.report import diff_markdown
from optimizer.search.candidate import Proposal
from optimizer.untrusted import UNTRUSTED_NOTICE, fence

EXCERPT_CHARS = 320


class DiagnoseFailure(dspy.Signature):
    """You audit an AI agent that succeeded with its full context but failed once its context was
    compressed. From the deterministic diff of what compression removed and excerpts of the two
    contexts, name the root causes and propose one general remedy for the compression guideline.
    Root causes: missing fact, lost variable, lost error or warning, lost rule, duplicate write,
    instruction drift, premature finish, other. """

    task: str = dspy.InputField(desc="The agent's task (fenced, untrusted).")
    provenance_diff: str = dspy.InputField(desc="Missing literals, their class, the stage that dropped them.")
    excerpts: str = dspy.InputField(desc="Where each missing literal sat in the full context (fenced, untrusted).")
    root_causes: str = dspy.OutputField(desc="Comma-separated root causes.")
    evidence: str = dspy.OutputField(desc="One or two sentences citing the diff.")
    remedy: str = dspy.OutputField(desc="One general rule for the guideline; never copy literal values.")


class ProposeGuideline(dspy.Signature):
    """You improve the instructions of a context compressor for an AI agent. Rewrite the two
    instructions (history summary, tool-result compression) so that the diagnosed failures would not
    recur, keeping everything that works. State rules generally; never copy ids or values from the
    diagnoses. Optionally edit the retention policy. Keep each instruction under 250 words."""

    history_instruction: str = dspy.InputField(desc="Current history-compressor instruction.")
    observation_instruction: str = dspy.InputField(desc="Current tool-result-compressor instruction.")
    policy: str = dspy.InputField(desc="Current retention policy (JSON).")
    retention_rules: str = dspy.InputField(desc="Fixed rules every compressor must follow.")
    diagnoses: str = dspy.InputField(desc="What compression broke and the suggested remedies.")
    new_history_instruction: str = dspy.OutputField(desc="The full rewritten history instruction.")
    new_observation_instruction: str = dspy.OutputField(desc="The full rewritten tool-result instruction.")
    policy_changes: str = dspy.OutputField(
        desc='JSON object with policy fields to replace (pinned, write, history, budget_tokens), each with its '
        'full new value; {} if none.'
    )


class ShortenGuideline(dspy.Signature):
    """You make the instructions of a context compressor for an AI agent produce shorter outputs
    without losing what the agent still uses. The analysis shows what compressed outputs contained
    that the agent never used later. Rewrite both instructions with concrete anti-verbosity rules
    while keeping every rule about what must be kept. Never copy ids or values. Keep each
    instruction under 250 words."""

    history_instruction: str = dspy.InputField(desc="Current history-compressor instruction.")
    observation_instruction: str = dspy.InputField(desc="Current tool-result-compressor instruction.")
    retention_rules: str = dspy.InputField(desc="Fixed rules every compressor must follow.")
    unused_content: str = dspy.InputField(desc="What the compressed outputs kept that was never used.")
    new_history_instruction: str = dspy.OutputField(desc="The full rewritten, shorter-output history instruction.")
    new_observation_instruction: str = dspy.OutputField(desc="The full rewritten tool-result instruction.")


DiagnoseFailure = DiagnoseFailure.with_instructions(f"{DiagnoseFailure.instructions}\n{UNTRUSTED_NOTICE}")
ProposeGuideline = ProposeGuideline.with_instructions(f"{ProposeGuideline.instructions}\n{UNTRUSTED_NOTICE}")
ShortenGuideline = ShortenGuideline.with_instructions(f"{ShortenGuideline.instructions}\n{UNTRUSTED_NOTICE}")


def make_lm(client: ChatClient, *, temperature: float, seed: int) -> dspy.LM:
    """A DSPy LM on the same OpenAI-compatible endpoint as `client` (never the network)."""
    return dspy.LM(
        f"openai/{client.model}", api_base=client.base_url, api_key=client.config.api_key(),
        temperature=temperature, max_tokens=client.config.max_tokens, cache=False,
        num_retries=client.config.max_retries, seed=seed,
    )


class LlmProposer:
    """Runs the three programs against the optimizer endpoint and accounts for their tokens."""

    def __init__(self, client: ChatClient, *, seed: int) -> None:
        self.client = client
        self.seed = seed
        self.tokens = 0

    def _run(self, program: dspy.Module, *, temperature: float, seed: int, **inputs: Any) -> dspy.Prediction:
        lm = make_lm(self.client, temperature=temperature, seed=seed)
        try:
            with dspy.context(lm=lm, adapter=dspy.ChatAdapter()):
                return program(**inputs)
        finally:
            for entry in lm.history:
                usage = entry.get("usage") or {}
                self.tokens += int(usage.get("total_tokens") or 0)

    def diagnose(self, diff: PairDiff, task: str) -> dict[str, str]:
        excerpts = "\n".join(_excerpt(diff.full_context, f.literal) for f in diff.missing) or "(none)"
        try:
            prediction = self._run(
                dspy.Predict(DiagnoseFailure), temperature=0.0, seed=self.seed,
                task=fence(task, "task"), provenance_diff=diff_markdown(diff),
                excerpts=fence(excerpts, "excerpts"),
            )
        except Exception as exc:
            return {"task_id": diff.task_id, "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
        return {
            "task_id": diff.task_id, "root_causes": str(prediction.root_causes), "evidence": str(prediction.evidence),
            "remedy": str(prediction.remedy),
        }

    def propose(self, current: Guideline, diagnoses: Sequence[dict[str, str]], diffs: Sequence[PairDiff],
                *, k: int, round_index: int) -> list[Proposal]:
        summary = _diagnosis_text(diagnoses, diffs)
        proposals = []
        for index in range(k):
            seed = self.seed * 1000 + round_index * 10 + index
            before = self.tokens
            try:
                prediction = self._run(
                    dspy.Predict(ProposeGuideline), temperature=0.7, seed=seed,
                    history_instruction=current.history, observation_instruction=current.observation,
                    policy=json.dumps(current.policy.model_dump(mode="json")), retention_rules=summary_rules(),
                    diagnoses=fence(summary, "diagnoses"),
                )
                guideline = _apply(
                    current, prediction.new_history_instruction, prediction.new_observation_instruction,
                    prediction.policy_changes, f"ut{round_index}.{index}",
                )
                proposals.append(Proposal("llm-ut", guideline, rationale=summary[:500],
                                          optimizer_tokens=self.tokens - before))
            except Exception as exc:
                proposals.append(Proposal("llm-ut", None, error=f"{type(exc).__name__}: {str(exc)[:200]}",
                                          optimizer_tokens=self.tokens - before))
        return proposals

    def shorten(self, current: Guideline, analysis: str, *, k: int, round_index: int) -> list[Proposal]:
        proposals = []
        for index in range(k):
            seed = self.seed * 1000 + round_index * 10 + 5 + index
            before = self.tokens
            try:
                prediction = self._run(
                    dspy.Predict(ShortenGuideline), temperature=0.7, seed=seed,
                    history_instruction=current.history, observation_instruction=current.observation,
                    retention_rules=summary_rules(), unused_content=fence(analysis, "analysis"),
                )
                guideline = _apply(current, prediction.new_history_instruction,
                                   prediction.new_observation_instruction, "{}", f"co{round_index}.{index}")
                proposals.append(Proposal("llm-co", guideline, rationale=analysis[:500],
                                          optimizer_tokens=self.tokens - before))
            except Exception as exc:
                proposals.append(Proposal("llm-co", None, error=f"{type(exc).__name__}: {str(exc)[:200]}",
                                          optimizer_tokens=self.tokens - before))
        return proposals


def _apply(current: Guideline, history: str, observation: str, policy_changes: str, tag: str) -> Guideline:
    changes = _parse_changes(policy_changes)
    policy = current.policy
    if changes:
        merged = policy.model_dump(mode="json")
        merged.update({key: value for key, value in changes.items() if key in merged})
        policy = RetentionPolicy.model_validate(merged)
    return Guideline(
        name=f"{current.name.split('+')[0]}+{tag}", description=current.description, policy=policy,
        history=str(history).strip() or current.history, observation=str(observation).strip() or current.observation,
    )


def _parse_changes(text: Any) -> dict[str, Any]:
    if isinstance(text, dict):
        return text
    raw = str(text).strip().strip("`")
    raw = raw[raw.find("{") : raw.rfind("}") + 1] if "{" in raw else "{}"
    try:
        data = json.loads(raw)
    except json.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


def _excerpt(context: str, literal: str) -> str:
    at = context.find(literal)
    if at < 0:
        return f"`{literal}`: not found in the full context"
    start = max(0, at - EXCERPT_CHARS // 2)
    return f"`{literal}`: ...{context[start : at + len(literal) + EXCERPT_CHARS // 2]}..."


def _diagnosis_text(diagnoses: Sequence[dict[str, str]], diffs: Sequence[PairDiff]) -> str:
    lines = []
    for diff in diffs:
        for fact in diff.missing:
            lines.append(
                f"- a {fact.kind} ({fact.retention or 'unknown'} content) was lost at checkpoint "
                f"{fact.checkpoint or '-'} ({fact.checkpoint_name}) by {(fact.record or {}).get('action', '?')}; "
                f"the agent then had to {fact.behaviour}"
            )
    for diagnosis in diagnoses:
        if "remedy" in diagnosis:
            lines.append(f"- diagnosed: {diagnosis['root_causes']}. Remedy: {diagnosis['remedy']}")
    return "\n".join(dict.fromkeys(lines)) or "- no failures were found; make the instructions clearer."
