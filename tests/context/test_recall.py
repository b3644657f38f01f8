"""Recoverable clearing: a cleared result comes back through `recall(handle)`, and the episode pays for it."""

from __future__ import annotations

import json

from optimizer.agent.llm import LlmAgent
from optimizer.agent.loop import EpisodeServices, run_episode
from optimizer.context.strategies import ClearToolUses
from optimizer.llm.usage import Pricing
from optimizer.tokens import count_tokens
from optimizer.world import Need, NeedKind
from tests.conftest import scripted
from tests.context.conftest import CATALOG, STANDARD, assert_contract, make_task, run, stub_client

CLEAR = ClearToolUses(trigger_tokens=2000, keep_last=2)
# The answer needs the bin from the catalogue read, which clear_tool_uses has cleared by then.
NEEDS_BIN = (Need(NeedKind.VALUE, "B-14", guess="B-00"),)


def test_the_reference_agent_recalls_a_cleared_result_and_gets_the_original_back():
    result = run(CLEAR, answer="ORD-5521 from bin B-14", answer_needs=NEEDS_BIN)
    episode = result.episode
    assert [d.behaviour for d in episode.deviations] == ["recall"]  # a near miss, on the record
    assert episode.answers == ["ORD-5521 from bin B-14"]

    recall = next(c for c in episode.tool_calls if c.name == "recall")
    assert recall.arguments == {"handle": "h1"} and recall.step == 10
    restored = next(e for e in episode.entries if e.call and e.call.name == "recall")
    assert episode.text(restored.text) == CATALOG == episode.text(restored.raw)
    assert restored.retention == "static"  # the original class, not the recall tool's

    assert episode.metrics.recall_calls == 1
    assert episode.metrics.recalled_tokens == count_tokens(CATALOG) == 1097
    # The recalled content is paid for in the next request, and the recall costs a step.
    before, after = episode.steps[-2].input_tokens, episode.steps[-1].input_tokens
    assert after - before >= count_tokens(CATALOG)
    assert len(episode.steps) == len(STANDARD) + 2
    assert_contract(result)


def test_without_the_need_nothing_is_recalled():
    episode = run(CLEAR).episode
    assert episode.metrics.recall_calls == 0 and episode.metrics.recalled_tokens == 0


def test_a_recalled_result_is_not_cleared_again():
    result = run(ClearToolUses(trigger_tokens=1000, keep_last=0), answer="B-14", answer_needs=NEEDS_BIN)
    assert result.episode.metrics.recall_calls == 1
    assert result.visible_at_end("FACT-STATIC-77")


def _recall_h99(strategy) -> tuple[bool, str]:
    """Three standard steps (nothing cleared yet), then a recall of a handle that does not exist."""
    script = (*STANDARD[:3],)
    task = make_task(script)
    replies = [json.dumps({"tool": item.tool, "arguments": dict(item.arguments)}) for item in script] + [
        json.dumps({"tool": "recall", "arguments": {"handle": "h99"}}),
        json.dumps({"tool": "finish", "arguments": {"answer": "done"}}),
    ]
    from optimizer.testing.stub_server import StubServer

    with StubServer(scripted(replies)) as url:
        agent = LlmAgent(stub_client(url), native=False)
        episode = run_episode(task, agent, strategy, EpisodeServices())
    result = next(e for e in episode.entries if e.call and e.call.name == "recall")
    assert episode.metrics.recalled_tokens == 0
    return result.is_error, episode.text(result.text)


def test_an_unknown_handle_is_an_error_result_not_a_crash():
    from optimizer.context.guideline import Guideline
    from optimizer.context.policy import RetentionPolicy
    from optimizer.context.strategies import GuidelineStrategy

    policy = ClearToolUses().policy().model_dump(mode="json")
    listed = RetentionPolicy.model_validate({**policy, "recall_tool": "always", "pinned": ["skill", "write_receipt"]})
    offered = GuidelineStrategy(guideline=Guideline(name="clear", policy=listed, history="-", observation="-"))
    is_error, text = _recall_h99(offered)
    assert is_error and "no stored content for handle 'h99'" in text
    # Before anything is cleared the tool is not offered, and a call of it is an unknown tool's.
    is_error, text = _recall_h99(ClearToolUses())
    assert is_error and "unknown tool 'recall'" in text


def _llm_episode(stub, *, recall: bool):
    """An LLM agent (scripted over a stub server) runs the standard script, optionally recalling h1."""
    actions = [{"tool": item.tool, "arguments": dict(item.arguments)} for item in STANDARD]
    if recall:
        actions.append({"tool": "recall", "arguments": {"handle": "h1"}})
    actions.append({"tool": "finish", "arguments": {"answer": "ORD-5521"}})
    server = stub(scripted([json.dumps(a) for a in actions]))
    client = stub_client(server.base_url)
    services = EpisodeServices(agent_pricing=Pricing(input_per_mtok=1.0, output_per_mtok=2.0))
    return run_episode(make_task(), LlmAgent(client, native=False), CLEAR, services)


def test_a_recall_shows_in_the_agent_tokens_and_cost(stub):
    plain = _llm_episode(stub, recall=False)
    recalled = _llm_episode(stub, recall=True)
    assert plain.outcome == recalled.outcome == "success"
    assert (plain.metrics.recall_calls, recalled.metrics.recall_calls) == (0, 1)
    assert recalled.metrics.recalled_tokens == 1097
    # Two requests carry the recalled catalogue (the recall's own answer step and the finish).
    extra_prompt = recalled.metrics.agent_prompt_tokens - plain.metrics.agent_prompt_tokens
    assert extra_prompt >= 1097
    assert recalled.metrics.cost - plain.metrics.cost >= 1097 / 1e6
    assert (
        recalled.metrics.cost
        == (recalled.metrics.agent_prompt_tokens * 1.0 + recalled.metrics.agent_completion_tokens * 2.0) / 1e6
    )


# --- honest recall: decided from what the context shows, never from the store -------------------------


def recall_run(strategy, mode: str, script=STANDARD):
    from optimizer.world.sources import need_sources
    from tests.context.conftest import RecordingReference, Run

    task = make_task(script, answer="ORD-5521 from bin B-14", answer_needs=NEEDS_BIN)
    agent = RecordingReference(task.reference, sources=need_sources(task), recall_mode=mode)
    episode = run_episode(task, agent, strategy, EpisodeServices())
    return Run(episode, agent.sent, task)


def test_the_honest_agent_recalls_the_placeholder_of_the_call_the_fact_came_from():
    result = recall_run(CLEAR, "honest")
    recall = next(c for c in result.episode.tool_calls if c.name == "recall")
    # h1 is the catalogue read (call ref_2), where B-14 first appeared; the agent saw its placeholder.
    placeholder = next(t for t in result.sent[recall.step] if 'recall(handle="h1")' in str(t.get("content")))
    assert "call_id=ref_2" in placeholder["content"]
    assert result.episode.outcome == "success"
    assert [(d.literal, d.behaviour) for d in result.episode.deviations] == [("B-14", "recall")]


def test_an_agent_that_never_recalls_guesses_instead():
    result = recall_run(CLEAR, "never")
    assert result.episode.metrics.recall_calls == 0
    assert [(d.literal, d.behaviour) for d in result.episode.deviations] == [("B-14", "guess")]
    assert result.episode.answers == ["ORD-5521 from bin B-00"]


def test_the_honest_agent_does_not_recall_what_no_placeholder_points_to():
    """B-14 came from the catalogue, which is masked without a handle; a later search that also shows
    B-14 is cleared behind one. Peeking into the store finds B-14 there; an honest agent has no reason
    to think that search holds it, and guesses."""
    from optimizer.context.guideline import SEED_GUIDELINE, RetentionPolicy, read_guideline
    from optimizer.context.strategies import GuidelineStrategy
    from tests.context.conftest import Scripted, filler, ok

    hits = "\n".join(["hit: widget W-778 in bin B-14", *filler("bins", 40)])
    search = Scripted("search", {"query": "bins"}, ok(hits))
    script = (*STANDARD[:2], search, *STANDARD[4:6])
    policy = RetentionPolicy.model_validate(
        {
            "history": [
                {"move": "clear", "trigger_tokens": 0, "keep_last": 0, "exclude_tools": ["read_file"]},
                {"move": "mask", "keep_last": 1, "keep_first": False},
            ]
        }
    )
    strategy = GuidelineStrategy(guideline=read_guideline(SEED_GUIDELINE).model_copy(update={"policy": policy}))
    peek = recall_run(strategy, "peek", script=script)
    honest = recall_run(strategy, "honest", script=script)
    assert peek.episode.metrics.recall_calls == 1 and peek.episode.outcome == "success"
    assert honest.episode.metrics.recall_calls == 0
    assert [(d.literal, d.behaviour) for d in honest.episode.deviations] == [("B-14", "guess")]


def test_the_summary_index_is_enough_to_recall(compressor_for):
    from optimizer.context.guideline import SEED_GUIDELINE, RetentionPolicy, read_guideline
    from optimizer.context.strategies import GuidelineStrategy

    compressor, _ = compressor_for()
    seed = read_guideline(SEED_GUIDELINE)
    policy = RetentionPolicy.model_validate({"history": [{"move": "summarize", "over": 300, "keep_last": 1}]})
    strategy = GuidelineStrategy(guideline=seed.model_copy(update={"policy": policy}))
    from optimizer.world.sources import need_sources
    from tests.context.conftest import RecordingReference

    task = make_task(answer="ORD-5521 from bin B-14", answer_needs=NEEDS_BIN)
    agent = RecordingReference(task.reference, sources=need_sources(task))
    episode = run_episode(task, agent, strategy, EpisodeServices(compressor=compressor))
    recall = next(c for c in episode.tool_calls if c.name == "recall")
    sent = "\n".join(str(m.get("content")) for m in agent.sent[recall.step])
    handle = recall.arguments["handle"]
    assert f'- recall(handle="{handle}"): read_file({{"path": "docs/catalog.md"}}) call_id=ref_2' in sent
    assert episode.outcome == "success" and {d.behaviour for d in episode.deviations} == {"recall"}
