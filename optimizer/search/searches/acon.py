"""`search = "acon"` (`[optimize.acon]`): rounds of UT and CO steps over a Pareto front warm-started with
every baseline.

    each round  parents = the best few screened candidates
                pairs   = what each parent lost against full context (mined from every parent, not only
                          the current best); if no parent lost anything, a provoked variant with its
                          triggers lowered to the floor is screened to find what compression breaks
                UT      = every UT proposer on every parent (patch, rules, grafts, the LLM's rules)
                CO      = every CO proposer on the best after the UT step (tighten, the LLM's shortening)
                screen  = each new candidate (validated first), tiered by cost
                stop    when a round moves neither the front nor the best, or the budget is spent

Every proposal batch is checkpointed before it is screened, so a killed job redoes no model call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import Field

from optimizer.context.moves.knobs import provoked
from optimizer.jsontypes import record
from optimizer.report.front import improves_front
from optimizer.report.model import RoundSummary
from optimizer.search.candidate import Candidate, Proposal
from optimizer.search.events import RoundMined
from optimizer.search.proposers import DEFAULT_PROPOSERS, Proposer, ProposerConfig
from optimizer.search.proposers.base import Pair, ProposalInput
from optimizer.search.searches.base import Search, SearchContext, SearchResult
from optimizer.search.validate import validate


class AconSearch(Search):
    """Rounds of proposers over a Pareto front: pairs mined from every parent, a UT then a CO step."""

    type: Literal["acon"] = "acon"
    proposers: tuple[ProposerConfig, ...] = Field(
        DEFAULT_PROPOSERS, description="Proposers the rounds run (deterministic and LLM; `[]` of LLM ones: ablation)."
    )
    llm_proposers: bool = Field(
        True,
        description="Run the proposers that call the optimizer LLM (false: deterministic only, the ablation).",
    )
    parents: int = Field(2, ge=1, le=10, description="Best candidates each round proposes from.")
    llm_parents: int = Field(
        1,
        ge=0,
        le=10,
        description="Of those, how many (the best with pairs) the LLM proposers see per round.",
    )
    provoke: bool = Field(True, description="When no parent loses a task, screen one with its triggers lowered.")
    near_misses: bool = Field(
        True,
        description="Also learn from tasks a candidate solved only by recalling what it had cut.",
    )
    mine_tier1: int = Field(
        0,
        ge=0,
        description="Train tasks each round's best parent and full context also run at tier 1 on, so that pairs "
        "come from the real agent (majority over `selection.tier1_repeats`); 0: tier-0 pairs only.",
    )
    max_guideline_chars: int = Field(6000, gt=200, description="Validator cap on a candidate's text.")

    @property
    def uses_optimizer(self) -> bool:
        return self.llm_proposers and any(p.uses_llm for p in self.proposers)

    def run(self, ctx: SearchContext) -> SearchResult:
        budget = ctx.options.budget
        while not ctx.state.search_done and ctx.state.round < budget.rounds:
            if self._over_budget(ctx):
                ctx.state.stopped = f"candidate budget spent ({budget.max_candidates} screened)"
                break
            self._round(ctx, ctx.state.round + 1)
        if not ctx.state.search_done:
            ctx.state.search_done = True
            ctx.state.stopped = ctx.state.stopped or f"ran all {budget.rounds} rounds"
            ctx.save()
        return SearchResult(ctx.best(), ctx.state.round, ctx.state.stopped or "")

    def _round(self, ctx: SearchContext, index: int) -> None:
        front_before = ctx.front(before_round=index)
        ranked = ctx.ranked(before_round=index)
        best_before = ranked[0] if ranked else None
        parents, provoked = self._plan(ctx, index, ranked)
        pairs = {p.version: self._pairs(ctx, p) for p in parents}
        if self.mine_tier1 and parents:
            # The real agent's pairs for the round's best parent: what tier 0 cannot see (a fact shown and not
            # acted on, a recall not made or made in a loop) is learned from too.
            leader = parents[0]
            pairs[leader.version] = [*pairs[leader.version], *ctx.tier1_pairs(leader, self.mine_tier1)]
        found = sum(len(v) for v in pairs.values())
        near = sum(1 for v in pairs.values() for p in v if p.compressed.success)
        provoking = f" (provoked by {provoked.guideline.name})" if provoked else ""
        ctx.log(
            f"round {index}: {found - near} pair(s) where compression broke a task full context solved, "
            f"{near} near miss(es) saved by a recall{provoking}"
        )
        if ctx.publish is not None:
            mined = [pair for v in pairs.values() for pair in v]
            ctx.publish(RoundMined(index, tuple(p.diff for p in mined), tuple((p.full, p.compressed) for p in mined)))
        self._write_diffs(ctx, index, [pair for v in pairs.values() for pair in v])

        screened: list[Candidate] = []
        others = [c for c in ranked if c.version not in {p.version for p in parents}][:4]
        # The optimizer LLM is the slowest proposer: only the best few parents that lost something get it.
        llm_parents = {p.version for p in parents if pairs.get(p.version)}
        llm_parents = {v for v in [p.version for p in parents if p.version in llm_parents][: self.llm_parents]}
        for parent in parents:
            inputs = ProposalInput(
                parent,
                pairs.get(parent.version, []),
                (),
                others,
                index,
                ctx.config.seed,
                ctx.llm if parent.version in llm_parents else None,
            )
            screened += self._apply(ctx, index, parent, inputs, step="ut")
        for rank, parent in enumerate(self._co_parents(ctx, index)):
            llm = ctx.llm if rank < self.llm_parents else None
            inputs = ProposalInput(parent, (), ctx.successes(parent), others, index, ctx.config.seed, llm)
            screened += self._apply(ctx, index, parent, inputs, step="co")
        best = ctx.best()
        front_after = ctx.front()
        improved = improves_front(front_before, front_after) or (
            best is not None and best_before is not None and best.version != best_before.version
        )
        summary = RoundSummary(
            round=index,
            pairs=found,
            parents=[p.version for p in parents],
            screened=list(dict.fromkeys(c.version for c in screened)),
            rejected=[
                {"origin": c.origin, "version": c.version, "reason": c.rejected}
                for c in ctx.state.candidates.values()
                if c.round == index and c.rejected
            ],
            best=best.version if best else "",
            improved=improved,
            provoked=provoked.version if provoked else None,
            front=[p.to_dict() for p in front_after],
        )
        ctx.dir.write_json(f"rounds/{index:02d}/summary.json", summary.__dict__)
        ctx.state.rounds = [r for r in ctx.state.rounds if r.round != index] + [summary]
        if not improved:
            ctx.state.search_done = True
            ctx.state.stopped = f"round {index} moved neither the front nor the best candidate"
        ctx.save()
        if best is not None:
            scores = best.screens["train"]
            ctx.log(
                f"round {index}: best {best.guideline.name}@{best.version} (success {scores.success:.2f}, "
                f"peak {scores.peak_mean:,.0f}), {len(summary.screened)} screened, front {len(front_after)}"
            )

    def _plan(
        self, ctx: SearchContext, index: int, ranked: list[Candidate]
    ) -> tuple[list[Candidate], Candidate | None]:
        """The round's parents, fixed when it starts and checkpointed: a resumed round proposes from the same."""
        relative = f"rounds/{index:02d}/plan.json"
        saved = ctx.dir.read_json(relative)
        if isinstance(saved, dict) and all(v in ctx.state.candidates for v in saved.get("parents", [])):
            provoked = ctx.state.candidates.get(saved.get("provoked") or "")
            return [ctx.state.candidates[v] for v in saved["parents"]], provoked
        parents = ranked[: self.parents]
        # Learn from every screened candidate that lost a task, not only from the best: the best few losers
        # (a seed that drops a rule, a baseline that drops a row) are fixed as parents too.
        losers = [c for c in ranked[self.parents :] if self._pairs(ctx, c)][: self.parents]
        parents = [*parents, *losers]
        provoked = None
        if self.provoke and parents and not any(self._pairs(ctx, p) for p in parents):
            provoked = self._provoke(ctx, parents[0], index)
            if provoked is not None:
                parents = [*parents, provoked]
        ctx.dir.write_json(
            relative, {"parents": [p.version for p in parents], "provoked": provoked.version if provoked else None}
        )
        ctx.log(f"round {index}: parents " + ", ".join(f"{p.guideline.name}@{p.version}" for p in parents))
        return parents, provoked

    def _co_parents(self, ctx: SearchContext, index: int) -> list[Candidate]:
        """The best after the UT step, checkpointed: a resumed round's CO candidates do not change them."""
        relative = f"rounds/{index:02d}/plan.json"
        saved = ctx.dir.read_json(relative)
        plan = dict(saved) if isinstance(saved, Mapping) else {}
        chosen = plan.get("co_parents")
        if isinstance(chosen, list):
            known = [ctx.state.candidates[v] for v in chosen if isinstance(v, str) and v in ctx.state.candidates]
            if known and len(known) == len(chosen):
                return known
        parents = ctx.ranked()[: self.parents]
        ctx.dir.write_json(relative, {**plan, "co_parents": [p.version for p in parents]})
        return parents

    def _apply(
        self, ctx: SearchContext, index: int, parent: Candidate, inputs: ProposalInput, *, step: str
    ) -> list[Candidate]:
        out: list[Candidate] = []
        for proposer in self.proposers:
            if proposer.step != step or (proposer.uses_llm and (inputs.llm is None or not self.llm_proposers)):
                continue
            proposals = self._proposals(ctx, index, parent, proposer, inputs)
            for proposal in proposals:
                if self._over_budget(ctx):
                    return out
                candidate = self._admit(ctx, proposal, parent, index)
                if candidate is not None:
                    out.append(candidate)
        return out

    def _proposals(
        self, ctx: SearchContext, index: int, parent: Candidate, proposer: Proposer, inputs: ProposalInput
    ) -> list[Proposal]:
        """A proposer's batch, checkpointed: a resumed job reuses it instead of asking the model again."""
        relative = f"rounds/{index:02d}/proposals/{parent.version}-{proposer.type}.json"
        saved = ctx.dir.read_json(relative)
        if isinstance(saved, list):
            try:
                return [Proposal.from_dict(record(p)) for p in saved]
            except (KeyError, TypeError, ValueError):
                ctx.log(f"{relative} is damaged; asking the proposer again")
        tokens_before = ctx.llm.tokens if ctx.llm is not None else 0
        proposals = proposer.propose(inputs)
        spent = (ctx.llm.tokens if ctx.llm is not None else 0) - tokens_before
        ctx.state.optimizer_tokens += spent - ctx.state.step_tokens.get(relative, 0)
        ctx.state.step_tokens[relative] = spent
        ctx.save()
        ctx.dir.write_json(relative, [p.to_dict() for p in proposals])
        for proposal in proposals:
            if proposal.guideline is None:
                ctx.log(f"round {index}: {proposal.origin} proposal failed: {proposal.error}")
        return proposals

    def _admit(self, ctx: SearchContext, proposal: Proposal, parent: Candidate, index: int) -> Candidate | None:
        if proposal.guideline is None:
            return None
        known = ctx.state.candidates.get(proposal.guideline.version)
        if known is not None:
            return ctx.screen(known) if not known.rejected else None
        candidate = Candidate(
            proposal.guideline,
            proposal.origin,
            index,
            parent=parent.version,
            rationale=proposal.rationale,
            llm=proposal.llm,
        )
        candidate.rejected = validate(
            proposal.guideline, parent.guideline, ctx.outputs, max_chars=self.max_guideline_chars
        )
        if candidate.rejected:
            ctx.remember(candidate)
            ctx.log(f"round {index}: rejected {proposal.origin} candidate: {candidate.rejected}")
            return None
        return ctx.screen(candidate)

    def _provoke(self, ctx: SearchContext, parent: Candidate, index: int) -> Candidate | None:
        """The parent with every trigger lowered to its floor: every run compresses, so something fails."""
        policy = parent.guideline.policy
        lowered = policy.model_copy(
            update={
                "write": tuple(provoked(m) for m in policy.write),
                "history": tuple(provoked(m) for m in policy.history),
            }
        )
        if lowered == policy:
            return None
        guideline = parent.guideline.model_copy(
            update={"policy": lowered, "name": f"{parent.guideline.name.split('+')[0]}+provoked"}
        )
        candidate = Candidate(
            guideline,
            "provoke",
            index,
            parent=parent.version,
            rationale="triggers lowered to their floor to find what compression breaks",
        )
        return ctx.screen(candidate)

    def _write_diffs(self, ctx: SearchContext, index: int, pairs: Sequence[Pair]) -> None:
        from optimizer.mining.diff_render import diff_html, diff_markdown

        rdir = f"rounds/{index:02d}"
        ctx.dir.write_json(f"{rdir}/diffs.json", [p.diff.to_dict() for p in pairs])
        for pair in pairs:
            name = f"{pair.diff.task_id}-{pair.compressed.strategy_version}"
            ctx.dir.write_text(f"{rdir}/diffs/{name}.md", diff_markdown(pair.diff))
            ctx.dir.write_text(f"{rdir}/diffs/{name}.html", diff_html(pair.diff))

    def _over_budget(self, ctx: SearchContext) -> bool:
        return sum(1 for c in ctx.state.candidates.values() if c.screens) >= ctx.options.budget.max_candidates

    def _pairs(self, ctx: SearchContext, candidate: Candidate) -> list[Pair]:
        return ctx.pairs(candidate, near_misses=self.near_misses)
