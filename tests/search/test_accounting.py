"""What counts against the search's tier-1 budget."""

from __future__ import annotations

import json

from optimizer.search.accounting import search_agent_episodes


def _run(job_dir, name: str, tasks: list[str], meta: dict | None = None) -> None:
    run = job_dir / "runs" / name
    run.mkdir(parents=True)
    (run / "episodes.jsonl").write_text("".join(json.dumps({"task_id": t}) + "\n" for t in tasks))
    if meta is not None:
        (run / "meta.json").write_text(json.dumps(meta))


def test_only_mining_and_confirmation_episodes_count_against_the_search_budget(tmp_path):
    _run(tmp_path, "none-llm-train-1a", ["a", "b", "a"])  # a task run again counts once, its newest record
    _run(tmp_path, "guideline-llm-val-2b", ["c", "d"])
    # The test report's rows come after the choice; tier 0 costs no agent episode.
    _run(tmp_path, "guideline-llm-test-3c", ["e", "f", "g"])
    _run(tmp_path, "guideline-reference-train-4d", ["a", "b"])
    assert search_agent_episodes(tmp_path) == 4


def test_the_run_s_meta_says_who_ran_it_and_on_which_split_before_its_name_does(tmp_path):
    # A strategy named with `-llm-val-` in it, run by the reference agent on test: not the search's.
    _run(tmp_path, "guideline:x-llm-val-y-reference-test-5e", ["a", "b"], {"agent": "reference", "split": "test"})
    _run(tmp_path, "none-llm-val-6f", ["c"], {"agent": "llm", "split": "val"})
    _run(tmp_path, "none-llm-train-7a", ["d", "e"])  # no meta: its name says
    assert search_agent_episodes(tmp_path) == 3
