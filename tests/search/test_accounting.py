"""What counts against the search's tier-1 budget."""

from __future__ import annotations

import json

from optimizer.search.accounting import search_agent_episodes


def _run(job_dir, name: str, tasks: list[str]) -> None:
    run = job_dir / "runs" / name
    run.mkdir(parents=True)
    (run / "episodes.jsonl").write_text("".join(json.dumps({"task_id": t}) + "\n" for t in tasks))


def test_only_mining_and_confirmation_episodes_count_against_the_search_budget(tmp_path):
    _run(tmp_path, "none-llm-train-1a", ["a", "b", "a"])  # a task run again counts once, its newest record
    _run(tmp_path, "guideline-llm-val-2b", ["c", "d"])
    # The test report's rows come after the choice; tier 0 costs no agent episode.
    _run(tmp_path, "guideline-llm-test-3c", ["e", "f", "g"])
    _run(tmp_path, "guideline-reference-train-4d", ["a", "b"])
    assert search_agent_episodes(tmp_path) == 4
