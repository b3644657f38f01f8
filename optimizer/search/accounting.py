"""What a job's recorded episodes cost, and which model faults they met: read back from its run directories."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from optimizer.evaluate.store import EpisodeStore, read_meta
from optimizer.jsontypes import JSON
from optimizer.report.model import Budget, Infrastructure


def run_dirs(job_dir: Path) -> list[Path]:
    return sorted(p.parent for p in (job_dir / "runs").glob("*/episodes.jsonl"))


def spent(job_dir: Path, *, optimizer_tokens: int, candidates: int) -> Budget:
    """What the job spent of its limits (the report's "budget"; not the pre-send budget of a policy), from the
    newest record of each task in each run directory: tier-1 episodes and uncached compressor calls."""
    agent_episodes = compressor_calls = 0
    for run in run_dirs(job_dir):
        latest = EpisodeStore(run).load()
        if _agent_and_split(run)[0] == "llm":
            agent_episodes += len(latest)
        compressor_calls += sum(1 for e in latest for r in e.records if r.compressor_usage and not r.compressor_cached)
    return Budget(
        candidates=candidates,
        agent_episodes=agent_episodes,
        compressor_calls=compressor_calls,
        optimizer_tokens=optimizer_tokens,
    )


def search_agent_episodes(job_dir: Path) -> int:
    """Tier-1 episodes the search spent (mining on train, confirmation on validation): what `max_agent_episodes`
    limits. The test report's rows run after the choice and are not the search's: counted against it, stored ones
    (a job resumed after its report, or started on a copy of another's runs) left the search no budget at all."""
    return sum(
        len(EpisodeStore(run).latest())
        for run in run_dirs(job_dir)
        if _agent_and_split(run) in (("llm", "train"), ("llm", "val"))
    )


def _agent_and_split(run: Path) -> tuple[str, str]:
    """Who ran a run directory's episodes and on which split, as its meta.json says; from its name
    (`<strategy>-<agent>-<split>-<key>`) when the meta is unreadable. A strategy's own name may hold `-llm-`."""
    meta = read_meta(run) or {}
    agent, split = meta.get("agent"), meta.get("split")
    if isinstance(agent, str) and isinstance(split, str):
        return agent, split
    parts = run.name.rsplit("-", 3)
    return (parts[1], parts[2]) if len(parts) == 4 else ("", "")


def infrastructure(job_dir: Path) -> Infrastructure:
    """Model faults over the whole job, from every episode record in its run directories.

    Retried calls are counted over all records, superseded ones included (those calls were made). An
    episode whose calls failed after their retries is an infrastructure error: excluded from every score
    and from pair mining, and run again when its run directory is evaluated again (`redone_episodes`);
    `excluded_episodes` are the ones still standing in the final records.
    """
    retried = retries = malformed = excluded = redone = 0
    kinds: Counter[str] = Counter()
    for run in run_dirs(job_dir):
        episodes = EpisodeStore(run).history()
        latest = {e.task_id: e for e in episodes}.values()
        redone += len(episodes) - len(latest)
        excluded += sum(1 for e in latest if e.outcome == "infra_error")
        for episode in episodes:
            retried += episode.metrics.retried_calls
            retries += episode.metrics.retries
            malformed += sum(1 for s in episode.steps if s.action.get("malformed"))
            if episode.outcome == "infra_error":
                kinds[str(episode.error or "unknown").split(":", 1)[0]] += 1
    failed = refused = 0
    for path in sorted(job_dir.glob("rounds/*/proposals/*.json")):
        for item in _json_list(path):
            if isinstance(item, dict) and item.get("error"):
                failed += bool(item.get("call_failed"))
                refused += not item.get("call_failed")
    return Infrastructure(
        retried_calls=retried,
        retries=retries,
        excluded_episodes=excluded,
        redone_episodes=redone,
        errors_by_kind=dict(sorted(kinds.items())),
        malformed_agent_replies=malformed,
        failed_optimizer_calls=failed,
        refused_proposals=refused,
    )


def _json_list(path: Path) -> list[JSON]:
    try:
        data: JSON = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return []
    return data if isinstance(data, list) else []
