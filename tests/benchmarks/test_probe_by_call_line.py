"""The by-call probe end to end on scripted models: the start screened, the optimizer's line checked, placed and
screened as a child paired with the start, and the refusals kept; its refusals of bad arguments come first."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from optimizer.config import load_experiment
from optimizer.context.compressor import Compressor
from optimizer.evaluate.strategy_runs import select_tasks
from optimizer.llm.cache import ResponseCache
from optimizer.llm.client import ChatClient
from optimizer.llm.endpoint import EndpointConfig
from optimizer.search.task_order import spread
from optimizer.testing.stub_server import StubServer
from optimizer.world.task import Task
from tests.conftest import benchmark_module

LINE = "Under each call, keep every line of its result that holds a needed value, word for word."


@pytest.fixture(scope="module")
def probe():
    yield from benchmark_module("probe_by_call_line")


def summarizer(request: dict) -> str:
    """Keeps every line it read only when the instructions carry the line; nothing otherwise."""
    prompt = str(request["messages"][-1]["content"])
    return prompt if LINE in prompt else "Summary of the work so far."


def run_probe(probe, tmp_path: Path, summarize, optimizer, tasks: int, asks: int, **options) -> tuple[list[Task], dict]:
    """The probe on the first `tasks` train tasks, the summarizer a stub server answering with `summarize`."""
    config = load_experiment(probe.ROOT / "experiments" / "summary_reach_long.toml")
    chosen = spread(select_tasks(config, "train", None))[:tasks]
    with StubServer(summarize) as url:
        client = ChatClient(EndpointConfig(base_url=url, model="stub", max_retries=0), base_url=url, model="stub")
        compressor = Compressor(client, ResponseCache(tmp_path / "c.sqlite"))
        return chosen, probe.probe(optimizer, compressor, chosen, (2000, 4), asks, False, **options)


def table_of(probe, tasks: list[Task], rows: dict, **report) -> str:
    knobs = {"trigger": 2000, "keep": 4}
    return probe.table(
        {"tasks": [t.id for t in tasks], "summarizer": "stub", "optimizer": "scripted", "knobs": knobs}
        | report
        | {"rows": rows}
    )


def test_a_line_that_passes_is_screened_as_a_child_and_paired_with_the_start(probe, tmp_path: Path):
    replies = iter(["Be brief.", LINE])
    tasks, rows = run_probe(probe, tmp_path, summarizer, lambda p, t: next(replies), 2, 2)
    start, refused, child = rows["facts-first+contract"], rows["by-call0"], rows["by-call1"]
    assert start["needed"] > 0 and start["kept"] == 0
    assert refused["lines"] == [] and "kept" not in refused
    assert [tuple(r) for r in refused["refused"]] == [("Be brief.", "too short to be an instruction")]
    assert child["lines"] == [LINE] and child["vs"] == "facts-first+contract" and LINE in child["text"]
    assert child["gain"]["tasks"] == 2 and child["kept"] > 0 and child["gain"]["mean"] > 0, child
    table = table_of(probe, tasks, rows)
    assert "| by-call0 | none survived (" in table and f"| by-call1 | {LINE} |" in table


@pytest.mark.parametrize("flag", ["--tasks", "--asks"])
def test_fewer_than_one_task_or_ask_is_refused_before_any_model(probe, capsys, flag):
    with pytest.raises(SystemExit) as exit_info:
        probe.main([flag, "0"])
    assert exit_info.value.code == 2 and f"{flag}: must be at least 1" in capsys.readouterr().err


def test_an_unknown_start_is_refused_before_any_model_and_names_the_known_ones(probe, capsys):
    with pytest.raises(SystemExit) as exit_info:
        probe.main(["--start", "facts-by-cal"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "--start: no layout probe text 'facts-by-cal'" in err
    assert "facts-by-call+contract" in err


def test_the_lines_are_added_to_the_start_asked_for(probe, tmp_path: Path):
    start = "facts-by-call+contract"
    _, rows = run_probe(probe, tmp_path, summarizer, lambda p, t: LINE, 1, 1, start=start)
    text = probe.texts()[start]
    assert list(rows) == [start, "by-call0"] and rows[start]["text"] == text
    child = rows["by-call0"]
    assert child["vs"] == start and child["text"] != text and LINE in child["text"]
    assert all(line in child["text"] for line in text.splitlines() if line.strip())


NEVER_INVENT = "Never write an id or amount you have not read in the messages, and keep values exactly as given."


def inventing_summarizer(request: dict) -> str:
    """States a made-up receipt unless the instructions forbid it."""
    prompt = str(request["messages"][-1]["content"])
    return "No values." if NEVER_INVENT in prompt else "The write returned receipt RCP-77Q41."


def test_the_inventing_question_shows_an_invented_line_and_counts_invented_summaries(probe, tmp_path: Path):
    prompts: list[str] = []

    def optimizer(prompt: str, temperature: float) -> str:
        prompts.append(prompt)
        return NEVER_INVENT

    tasks, rows = run_probe(probe, tmp_path, inventing_summarizer, optimizer, 1, 2, question="inventing")
    start, child, none_left = rows["facts-first+contract"], rows["inventing0"], rows["inventing1"]
    assert len(prompts) == 1 and "appear in no message" in prompts[0]
    # The optimizer sees the line's shape, never the made-up value itself.
    assert "RCP-77Q41" not in prompts[0] and "<value>" in prompts[0]
    assert start["invented"] == start["summaries"] > 0 and child["invented"] == 0
    assert child["lines"] == [NEVER_INVENT] and child["vs"] == "facts-first+contract"
    assert none_left["lines"] == [] and "kept" not in none_left
    table = table_of(probe, tasks, rows, question="inventing")
    assert table.startswith("the inventing question") and f"| 0 of {child['summaries']} |" in table


SAY_RESULTS = "State what each tool call returned instead of repeating the task's steps."


def restating_summarizer(request: dict) -> str:
    """The task's numbered steps again, one per line, unless the instructions ask for what the calls returned."""
    prompt = str(request["messages"][-1]["content"])
    if SAY_RESULTS in prompt:
        return "The calls returned what the agent asked for."
    task = re.search(r'<message type="human">(.*?)</message>', prompt, re.DOTALL)
    assert task is not None, prompt[:400]
    steps = re.split(r"\s\d+\)\s", task.group(1).strip())[1:]
    return "\n".join(f"- **{step.strip()}**" for step in steps)


def test_the_restating_question_shows_a_restated_task_with_tools_hidden(probe, tmp_path: Path):
    prompts: list[str] = []

    def optimizer(prompt: str, temperature: float) -> str:
        prompts.append(prompt)
        return SAY_RESULTS

    tasks, rows = run_probe(probe, tmp_path, restating_summarizer, optimizer, 1, 1, question="restating")
    start, child = rows["facts-first+contract"], rows["restating0"]
    assert start["restated"] == start["summaries"] > 0 and child["restated"] == 0
    assert len(prompts) == 1 and "starts the task over" in prompts[0] and "<tool>" in prompts[0]
    assert not re.search(r"\b[a-z]+_[a-z]+\b", prompts[0].split("# restated")[1])  # no tool name shown
    assert child["lines"] == [SAY_RESULTS]
    table = table_of(probe, tasks, rows, question="restating")
    assert table.startswith("the restating question") and f"| 0 of {child['summaries']} |" in table
