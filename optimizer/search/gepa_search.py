"""`search = "gepa"`: the same guideline texts optimized by GEPA (`gepa.optimize`), side by side.

GEPA evolves the two compressor instructions (the policy stays the seed's) by reflective mutation,
keeping a per-task Pareto front. It sees the same tier-0 metric as acon: per task, success minus
λ × peak tokens relative to `none`, with acon's provenance diff of a failure as textual feedback.
Its budget is counted in tier-0 episodes (`max_metric_calls`), so the two searches can be compared
at equal cost. Tool output reaches GEPA's reflection prompt only fenced as untrusted data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gepa import EvaluationBatch

from optimizer.agent.episode import Episode
from optimizer.context.guideline import Guideline
from optimizer.context.strategies import GuidelineStrategy
from optimizer.mining.provenance import diff_pair
from optimizer.mining.report import diff_markdown
from optimizer.search.candidate import Candidate
from optimizer.untrusted import UNTRUSTED_NOTICE, fence
from optimizer.world.task import Task

if TYPE_CHECKING:
    from optimizer.search.job import OptimizationJob

COMPONENTS = ("history", "observation")


class GuidelineAdapter:
    """GEPA adapter: a candidate is the two instruction texts over the seed's policy."""

    propose_new_texts = None  # GEPA's own reflective proposer writes the new texts

    def __init__(self, job: OptimizationJob, seed: Guideline) -> None:
        self.job = job
        self.seed = seed
        self.none = {e.task_id: e for e in job.none_train.episodes}
        self.metric_calls = 0

    def guideline(self, candidate: Mapping[str, str]) -> Guideline:
        return self.seed.model_copy(update={
            "history": candidate["history"], "observation": candidate["observation"],
            "name": f"{self.seed.name}+gepa",
        })

    def evaluate(self, batch: list[Task], candidate: dict[str, str], capture_traces: bool = False) -> EvaluationBatch:
        strategy = GuidelineStrategy(guideline=self.guideline(candidate))
        result = self.job.evaluate(strategy, batch, "train", self.job.options.screen_agent)
        self.metric_calls += len(batch)
        scores = [self._score(e) for e in result.episodes]
        trajectories = [(task, e) for task, e in zip(batch, result.episodes, strict=True)] if capture_traces else None
        return EvaluationBatch(outputs=result.episodes, scores=scores, trajectories=trajectories)

    def _score(self, episode: Episode) -> float:
        none = self.none.get(episode.task_id)
        peak_none = none.metrics["peak_tokens"] if none else episode.metrics["peak_tokens"]
        relative = episode.metrics["peak_tokens"] / peak_none if peak_none else 1.0
        return float(episode.success) - self.job.options.lam * relative

    def make_reflective_dataset(
        self, candidate: dict[str, str], eval_batch: EvaluationBatch, components_to_update: list[str]
    ) -> Mapping[str, Sequence[Mapping[str, Any]]]:
        records = []
        for (task, episode), score in zip(eval_batch.trajectories or [], eval_batch.scores, strict=True):
            none = self.none.get(episode.task_id)
            if none is not None and none.success and not episode.success:
                feedback = "FAILED where full context succeeded.\n" + diff_markdown(diff_pair(none, episode, task))
            else:
                peak_none = none.metrics["peak_tokens"] if none else 0
                feedback = (f"{'Succeeded' if episode.success else 'Failed (also failed with full context)'}; "
                            f"peak tokens {episode.metrics['peak_tokens']} vs {peak_none} with full context.")
            outputs = [episode.text(r["compressor_io"][1]) for r in episode.records if r.get("compressor_io")]
            records.append({
                "Inputs": {"task": fence(task.instruction, "task")},
                "Generated Outputs": fence("\n---\n".join(outputs)[:2000] or "(no compression happened)", "outputs"),
                "Feedback": f"score {score:.3f}. {feedback}",
            })
        return {name: records for name in components_to_update}


def reflection_lm(job: OptimizationJob):
    client = job.endpoints.client("optimizer")

    def call(prompt: str | list[dict[str, Any]]) -> str:
        messages = prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
        messages = [{"role": "system", "content": UNTRUSTED_NOTICE}, *messages]
        completion = client.complete(messages)
        job.state.optimizer_tokens += completion.usage.total_tokens
        return completion.text

    return call


class _Log:
    def __init__(self, job: OptimizationJob) -> None:
        self.job = job

    def log(self, message: str) -> None:
        self.job.log(f"gepa: {message}")


def run_gepa(job: OptimizationJob) -> tuple[Candidate, dict[str, int]]:
    """Optimize the seed's texts with GEPA; the best candidate (screened like acon's) and GEPA's counts."""
    import gepa

    seed = job.seed().guideline
    adapter = GuidelineAdapter(job, seed)
    result = gepa.optimize(
        seed_candidate={"history": seed.history, "observation": seed.observation},
        trainset=list(job.train), valset=list(job.train), adapter=adapter,
        reflection_lm=reflection_lm(job), max_metric_calls=job.options.gepa_metric_calls,
        reflection_minibatch_size=min(3, len(job.train)), run_dir=str(job.dir.path / "gepa"),
        seed=job.config.seed, display_progress_bar=False, raise_on_exception=False, logger=_Log(job),
    )
    best = Candidate(adapter.guideline(result.best_candidate), "gepa", 1, parent=seed.version,
                     rationale=f"GEPA best of {len(result.candidates)} candidates")
    best = job.remember_screened(best)
    return best, {"gepa_candidates": len(result.candidates), "gepa_metric_calls": adapter.metric_calls}
