"""`search = "gepa"` (`[optimize.gepa]`): the guideline texts optimized by GEPA (`gepa.optimize`), on the
same evaluator.

GEPA evolves the two compressor instructions of the seed (the policy stays the seed's) by reflective
mutation, keeping a per-task Pareto front. It sees the same tier-0 metric as acon: per task, success
minus λ × peak tokens relative to `none`, with acon's provenance diff of a failure as textual feedback.
Its budget is counted in tier-0 episodes (`metric_calls`), so the searches compare at equal cost.
Its best candidate joins the job's candidates and is selected on the validation split like any other.
Tool output reaches GEPA's reflection prompt only fenced as untrusted data. The `gepa` library is imported
when the search runs: a config that names no GEPA search does not load it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from optimizer.agent.episode import Episode
from optimizer.context.guideline import Guideline
from optimizer.jsontypes import JSONRecord
from optimizer.mining.diff_render import diff_markdown
from optimizer.mining.pair_diff import diff_pair
from optimizer.report.model import RoundSummary
from optimizer.search.candidate import Candidate, screened
from optimizer.search.searches.base import Search, SearchContext, SearchResult
from optimizer.untrusted import UNTRUSTED_NOTICE, fence
from optimizer.world.task import Task

if TYPE_CHECKING:
    from gepa import EvaluationBatch, GEPAResult
    from gepa.core.adapter import ProposalFn
    from gepa.proposer.reflective_mutation.base import LanguageModel

# What GEPA carries per task for the reflection: the task and its episode.
_Trace = tuple[Task, Episode]


class GuidelineAdapter:
    """GEPA adapter: a candidate is the two instruction texts over the seed's policy."""

    propose_new_texts: ProposalFn | None = None  # GEPA's own reflective proposer writes the new texts

    def __init__(self, ctx: SearchContext, seed: Guideline) -> None:
        self.ctx = ctx
        self.seed = seed
        self.none = {e.task_id: e for e in ctx.none_train.episodes}
        self.metric_calls = 0

    def guideline(self, candidate: Mapping[str, str]) -> Guideline:
        return self.seed.model_copy(
            update={
                "history": candidate["history"],
                "observation": candidate["observation"],
                "name": f"{self.seed.name}+gepa",
            }
        )

    def evaluate(
        self, batch: list[Task], candidate: dict[str, str], capture_traces: bool = False
    ) -> EvaluationBatch[_Trace, Episode]:
        from gepa import EvaluationBatch

        strategy = screened(self.guideline(candidate))
        # Read once: a run's records are parsed from disk on each pass over them.
        episodes = list(self.ctx.evaluator.evaluate(strategy, batch, "train", self.ctx.options.screen_agent).episodes)
        self.metric_calls += len(batch)
        scores = [self._score(e) for e in episodes]
        trajectories = list(zip(batch, episodes, strict=True)) if capture_traces else None
        return EvaluationBatch(outputs=episodes, scores=scores, trajectories=trajectories)

    def _score(self, episode: Episode) -> float:
        none = self.none.get(episode.task_id)
        peak_none = none.metrics.peak_tokens if none else episode.metrics.peak_tokens
        relative: float = episode.metrics.peak_tokens / peak_none if peak_none else 1.0
        return float(episode.success) - self.ctx.options.selection.lam * relative

    def make_reflective_dataset(
        self, candidate: dict[str, str], eval_batch: EvaluationBatch[_Trace, Episode], components_to_update: list[str]
    ) -> Mapping[str, Sequence[JSONRecord]]:
        records: list[JSONRecord] = []
        for (task, episode), score in zip(eval_batch.trajectories or [], eval_batch.scores, strict=True):
            none = self.none.get(episode.task_id)
            if none is not None and none.success and not episode.success:
                feedback = "FAILED where full context succeeded.\n" + diff_markdown(diff_pair(none, episode, task))
            else:
                peak_none = none.metrics.peak_tokens if none else 0
                feedback = (
                    f"{'Succeeded' if episode.success else 'Failed (also failed with full context)'}; "
                    f"peak tokens {episode.metrics.peak_tokens} vs {peak_none} with full context."
                )
            outputs = [episode.text(r.compressor_io[1]) for r in episode.records if r.compressor_io]
            records.append(
                {
                    "Inputs": {"task": fence(task.instruction, "task")},
                    "Generated Outputs": fence(
                        "\n---\n".join(outputs)[:2000] or "(no compression happened)", "outputs"
                    ),
                    "Feedback": f"score {score:.3f}. {feedback}",
                }
            )
        return {name: records for name in components_to_update}


class GepaSearch(Search):
    """GEPA's reflective evolution of the seed's two compressor instructions, on the same evaluator."""

    type: Literal["gepa"] = "gepa"
    metric_calls: int = Field(60, gt=0, description="Tier-0 episodes GEPA may run.")

    @property
    def uses_optimizer(self) -> bool:
        return True  # GEPA's reflection model

    def run(self, ctx: SearchContext) -> SearchResult:
        if ctx.state.search_done:
            return SearchResult(ctx.best(), ctx.state.round, ctx.state.stopped or "")
        import gepa

        assert ctx.state.seed is not None  # the job's warm start sets it before any search runs
        seed = ctx.state.candidates[ctx.state.seed].guideline
        adapter = GuidelineAdapter(ctx, seed)
        result: GEPAResult[Episode, int] = gepa.optimize(  # a list trainset: tasks keyed by position
            seed_candidate={"history": seed.history, "observation": seed.observation},
            trainset=list(ctx.train),
            valset=list(ctx.train),
            adapter=adapter,
            reflection_lm=_reflection_lm(ctx),
            max_metric_calls=self.metric_calls,
            reflection_minibatch_size=min(3, len(ctx.train)),
            run_dir=str(ctx.dir.path / "gepa"),
            seed=ctx.config.seed,
            display_progress_bar=False,
            raise_on_exception=False,
            logger=_Log(ctx),
        )
        texts = result.best_candidate
        assert isinstance(texts, dict)  # a str only when the seed was one
        best = Candidate(
            adapter.guideline(texts),
            "gepa",
            1,
            parent=seed.version,
            llm=True,
            rationale=f"GEPA best of {len(result.candidates)} candidates",
        )
        best = ctx.screen(best)
        ctx.state.rounds = [
            RoundSummary(
                round=1,
                pairs=0,
                parents=[seed.version],
                screened=[best.version],
                rejected=[],
                best=(ctx.best() or best).version,
                improved=best.version != seed.version,
                front=[p.to_dict() for p in ctx.front()],
            )
        ]
        ctx.state.search_done = True
        ctx.state.stopped = (
            f"GEPA used its budget of {self.metric_calls} tier-0 episodes "
            f"({adapter.metric_calls} run, {len(result.candidates)} candidates)"
        )
        ctx.save()
        return SearchResult(ctx.best(), 1, ctx.state.stopped)


def _reflection_lm(ctx: SearchContext) -> LanguageModel:
    if ctx.llm is None:
        raise RuntimeError("gepa search without the optimizer endpoint: the job starts it for search = 'gepa'")
    client = ctx.llm.client

    def call(prompt: str | list[dict[str, Any]]) -> str:
        messages = prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
        messages = [{"role": "system", "content": UNTRUSTED_NOTICE}, *messages]
        completion = client.complete(messages)
        ctx.state.optimizer_tokens += completion.usage.total_tokens
        return completion.text

    return call


class _Log:
    def __init__(self, ctx: SearchContext) -> None:
        self.ctx = ctx

    def log(self, message: str) -> None:
        self.ctx.log(f"gepa: {message}")
