"""`llm_shorten`: the CO step's LLM proposer. For a candidate whose policy uses an LLM compressor, the
optimizer model rewrites both instructions for shorter outputs from a literal-free report of what the
compressed contexts kept that the agent never used. A policy with no LLM move has nothing to shorten.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from optimizer.context.contract import summary_rules
from optimizer.search.analysis import unused_content
from optimizer.search.candidate import Proposal
from optimizer.search.proposers.base import ProposalInput, Proposer, derived
from optimizer.untrusted import fence


class LlmShorten(Proposer):
    """K shorter-output rewrites of the compressor instructions."""

    type: Literal["llm_shorten"] = "llm_shorten"
    step: ClassVar[Literal["ut", "co"]] = "co"
    uses_llm: ClassVar[bool] = True
    candidates: int = Field(1, ge=1, le=10, description="Proposals per parent (ACON: K=5).")

    def propose(self, inputs: ProposalInput) -> list[Proposal]:
        parent = inputs.parent.guideline
        if inputs.llm is None or not parent.policy.uses_compressor or not inputs.successes:
            return []
        from optimizer.search.proposers.signatures import ShortenGuideline  # imports DSPy: only when asking

        analysis = unused_content(inputs.successes)
        out = []
        for index in range(self.candidates):
            before = inputs.llm.tokens
            try:
                prediction = inputs.llm.run(
                    ShortenGuideline,
                    temperature=0.7,
                    seed=inputs.seed * 1000 + inputs.round * 10 + 5 + index,
                    history_instruction=parent.history,
                    observation_instruction=parent.observation,
                    retention_rules=summary_rules(),
                    unused_content=fence(analysis, "analysis"),
                )
                history = str(prediction.new_history_instruction).strip()
                observation = str(prediction.new_observation_instruction).strip()
                if not history or not observation:
                    raise ValueError("an empty instruction in the reply")
                guideline = derived(
                    parent, parent.policy, f"co{inputs.round}.{index}", history=history, observation=observation
                )
                out.append(
                    Proposal(
                        self.type,
                        guideline,
                        rationale=analysis[:500],
                        llm=True,
                        optimizer_tokens=inputs.llm.tokens - before,
                    )
                )
            except Exception as exc:  # a reply the model could not format: a failed proposal, on the record
                out.append(
                    Proposal(
                        self.type,
                        None,
                        error=f"{type(exc).__name__}: {str(exc)[:200]}",
                        llm=True,
                        call_failed=True,
                        optimizer_tokens=inputs.llm.tokens - before,
                    )
                )
        return out
