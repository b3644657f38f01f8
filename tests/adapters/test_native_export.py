"""`acon export --format anthropic|openai|langchain`: settings the installed SDKs accept, every loss reported."""

from __future__ import annotations

import json
import sys
import types
import typing
from dataclasses import dataclass

import pytest

from optimizer.adapters.langchain import middleware_from
from optimizer.adapters.native_export import export_native
from optimizer.adapters.native_targets import (
    COMPACT_DEFAULT_TRIGGER,
    CONTEXT_EDITING,
    LANGCHAIN_CLEAR_DEFAULT_TRIGGER,
    langchain_clear_default,
)
from optimizer.context.guideline import read_guideline
from optimizer.errors import ConfigError
from optimizer.runtime.retention_map import ToolRetention
from optimizer.world.retention import RetentionClass
from tests.conftest import ROOT

GUIDELINES = [
    "guidelines/seed/seed.md",
    *sorted(f"guidelines/learned/{p.name}" for p in (ROOT / "guidelines" / "learned").glob("*.md")),
]
RETENTION = {
    "read_doc": ToolRetention(RetentionClass.STATIC),
    "pay": ToolRetention(side_effect=True),
    "read_skill": ToolRetention(RetentionClass.SKILL),
}


def typed_dict_keys(cls) -> tuple[set[str], set[str]]:
    return set(cls.__required_keys__), set(cls.__required_keys__ | cls.__optional_keys__)


def check_against(value: dict, cls) -> None:
    """`value`'s keys are the TypedDict's (required ones present), recursively for nested TypedDicts."""
    required, allowed = typed_dict_keys(cls)
    assert required <= set(value) <= allowed, (cls.__name__, sorted(value), sorted(allowed))
    hints = typing.get_type_hints(cls)
    for key, item in value.items():
        nested = [a for a in typing.get_args(hints[key]) or (hints[key],) if typing.is_typeddict(a)]
        if isinstance(item, dict) and nested:
            check_against(item, nested[0])


@pytest.mark.parametrize("path", GUIDELINES)
def test_anthropic_settings_use_the_sdks_field_names(path):
    from anthropic.types.beta import (
        BetaClearToolUses20250919EditParam,
        BetaCompact20260112EditParam,
        BetaContextManagementConfigParam,
    )

    guideline = read_guideline(path)
    exported = export_native(guideline, "anthropic", RETENTION)
    moves = [m.move for m in guideline.policy.history if m.move in ("clear", "summarize")]
    config = exported.settings.get("context_management", {"edits": []})
    assert set(config) <= typed_dict_keys(BetaContextManagementConfigParam)[1]
    by_type = {
        "clear_tool_uses_20250919": BetaClearToolUses20250919EditParam,
        "compact_20260112": BetaCompact20260112EditParam,
    }
    assert len(config["edits"]) == len(moves)
    for edit in config["edits"]:
        check_against(edit, by_type[edit["type"]])
    if "clear" in moves:
        clear = next(e for e in config["edits"] if e["type"] == "clear_tool_uses_20250919")
        # Receipts and skills are never cleared; a static read only where the clear move leaves static alone.
        move = next(m for m in guideline.policy.history if m.move == "clear")
        static_kept = move.classes is not None and RetentionClass.STATIC not in move.classes
        assert sorted(clear["exclude_tools"]) == sorted(["pay", "read_skill", *(["read_doc"] * static_kept)])
    assert_every_entry_has_a_verdict(guideline, exported)


@pytest.mark.parametrize("path", GUIDELINES)
def test_langchain_export_is_built_into_live_middleware_by_the_loader(path, tmp_path):
    from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware, SummarizationMiddleware
    from langchain_openai import ChatOpenAI

    guideline = read_guideline(path)
    exported = export_native(guideline, "langchain", RETENTION)
    written = tmp_path / "export.json"
    written.write_text(json.dumps(exported.to_dict()))  # as `acon export --format langchain --out` writes it
    model = ChatOpenAI(base_url="http://127.0.0.1:9/v1", api_key="unused", model="m")
    built = middleware_from(written, model=model)
    moves = [m for m in guideline.policy.history if m.move in ("clear", "summarize")]
    kinds = {m.move for m in moves}
    expected = {
        cls
        for move, cls in (("clear", ContextEditingMiddleware), ("summarize", SummarizationMiddleware))
        if move in kinds
    }
    assert {type(m) for m in built} == expected
    for middleware in built:
        if isinstance(middleware, ContextEditingMiddleware):
            clears = [m for m in moves if m.move == "clear"]
            assert [type(e) for e in middleware.edits] == [ClearToolUsesEdit] * len(clears)
            for edit, move in zip(middleware.edits, clears, strict=True):
                assert (edit.trigger, edit.keep) == (move.trigger_tokens, move.keep_last)
        else:
            assert middleware.model is model and middleware.trigger == ("tokens", moves[-1].over)
            assert guideline.history.split("\n")[0] in middleware.summary_prompt
            middleware.summary_prompt.format(messages="x")  # the guideline's own braces are escaped
    assert_every_entry_has_a_verdict(guideline, exported)


def test_loader_refuses_what_it_cannot_build_in_one_line():
    seed = export_native(read_guideline("guidelines/seed/seed.md"), "langchain", RETENTION)
    with pytest.raises(ConfigError, match=r"middleware\[0\]: the guideline summarizes; pass model="):
        middleware_from(seed)
    foreign = {"format": "langchain", "settings": {"middleware": [{"class": "os.system", "kwargs": {}}]}}
    with pytest.raises(ConfigError, match=r"'os\.system' is not a middleware acon exports"):
        middleware_from(foreign)
    anthropic = export_native(read_guideline("guidelines/seed/seed.md"), "anthropic", RETENTION)
    with pytest.raises(ConfigError, match="the export: --format anthropic, not langchain"):
        middleware_from(anthropic)
    edited = {"middleware": [{"class": CONTEXT_EDITING, "kwargs": {"edits": [], "trigger": 5}}]}
    with pytest.raises(ConfigError, match=r"ContextEditingMiddleware refused the export's settings"):
        middleware_from(edited)


@pytest.mark.parametrize("path", GUIDELINES)
def test_openai_settings_are_accepted_by_the_sdks_responses_create(path):
    """`context_management` as the installed SDK types it, sent through `client.responses.create` (captured)."""
    import httpx
    import openai
    from openai.types.responses.response_create_params import ContextManagement

    guideline = read_guideline(path)
    exported = export_native(guideline, "openai", RETENTION)
    summarize = [m for m in guideline.policy.history if m.move == "summarize"]
    if not summarize:
        assert exported.settings == {}
        assert all(v.status == "not_mapped" for v in exported.verdicts if v.entry.startswith("history["))
        return
    assert set(exported.settings) == {"context_management"}
    for entry in exported.settings["context_management"]:
        check_against(entry, ContextManagement)
    assert exported.settings["context_management"] == [
        {"type": "compaction", "compact_threshold": min(m.over for m in summarize)}
    ]
    sent: list = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(500, json={"error": {"message": "captured"}})

    client = openai.OpenAI(api_key="x", max_retries=0, http_client=httpx.Client(transport=httpx.MockTransport(answer)))
    with pytest.raises(openai.InternalServerError):
        client.responses.create(model="gpt-x", input="hi", **exported.settings)
    (request,) = sent
    assert json.loads(request.content)["context_management"] == exported.settings["context_management"]
    text = next(v for v in exported.verdicts if v.entry == "history text")
    assert text.status == "not_mapped" and "exported nowhere" in text.note  # no field for instructions


def test_compressor_text_no_move_uses_is_reported_as_a_loss():
    guideline = read_guideline("guidelines/learned/bfcl_long_context.md")  # clears and masks: no LLM move
    for fmt in ("anthropic", "openai", "langchain"):
        texts = {v.entry: v for v in export_native(guideline, fmt, RETENTION).verdicts if v.entry.endswith(" text")}
        assert set(texts) == {"history text", "observation text"}
        for verdict in texts.values():
            assert verdict.status == "not_mapped" and "no move of the policy uses" in verdict.note
    seed = export_native(read_guideline("guidelines/seed/seed.md"), "anthropic", RETENTION)
    texts = {v.entry: v for v in seed.verdicts if v.entry.endswith(" text")}
    assert texts["history text"].status == "mapped"  # compact_20260112's instructions
    assert texts["observation text"].status == "not_mapped"
    assert "used by write[0], which has no native write-time stage" in texts["observation text"].note


def assert_every_entry_has_a_verdict(guideline, exported) -> None:
    policy = guideline.policy
    expected = [f"write[{i}] {m.move}" for i, m in enumerate(policy.write)]
    expected += [f"history[{i}] {m.move}" for i, m in enumerate(policy.history)]
    expected += ["pinned"] * bool(policy.pinned)
    expected += ["unlisted tools"] * any(m.move == "clear" for m in policy.history)
    expected += ["budget_tokens"] * (policy.budget_tokens is not None)
    expected += [f"{part} text" for part in ("history", "observation") if getattr(guideline, part).strip()]
    assert [v.entry for v in exported.verdicts] == expected
    for verdict in exported.verdicts:
        # No move maps without loss; a text maps only as the summary instructions of a move that exports.
        assert verdict.status != "mapped" or verdict.entry in ("pinned", "history text")
        if verdict.entry.startswith("write"):
            assert verdict.status == "not_mapped"


@pytest.mark.parametrize("path", GUIDELINES)
def test_anthropic_settings_are_accepted_by_the_sdks_create_call(path):
    """The settings go into the installed SDK's `client.beta.messages.create` as they stand; the request it
    would send carries each beta in its header and the edits in its body (captured, never sent)."""
    import anthropic
    import httpx2 as httpx  # the SDK ships its own copy of httpx under this name

    exported = export_native(read_guideline(path), "anthropic", RETENTION)
    if not exported.settings:
        pytest.skip("nothing of this guideline maps onto Anthropic's settings")
    sent: list = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        message = {"id": "m", "type": "message", "role": "assistant", "model": "claude-x", "content": []}
        usage = {"input_tokens": 1, "output_tokens": 1}
        return httpx.Response(200, json={**message, "stop_reason": "end_turn", "usage": usage})

    client = anthropic.Anthropic(api_key="x", http_client=httpx.Client(transport=httpx.MockTransport(answer)))
    question = [{"role": "user", "content": "hi"}]
    client.beta.messages.create(model="claude-x", max_tokens=16, messages=question, **exported.settings)
    (request,) = sent
    assert request.headers["anthropic-beta"].split(",") == exported.settings["betas"]
    assert json.loads(request.content)["context_management"] == exported.settings["context_management"]
    needs = {"clear_tool_uses_20250919": "context-management-2025-06-27", "compact_20260112": "compact-2026-01-12"}
    edits = exported.settings["context_management"]["edits"]
    assert {needs[e["type"]] for e in edits} == set(exported.settings["betas"])
    known = set(typing.get_args(typing.get_args(anthropic.types.AnthropicBetaParam)[1]))
    assert set(exported.settings["betas"]) <= known  # literal names of the installed SDK, not free strings


def test_exports_warn_on_triggers_that_cost_the_user():
    learned = export_native(read_guideline("guidelines/learned/bfcl_long_context.md"), "anthropic", RETENTION)
    assert any("trigger 0 input tokens" in w and "rewritten each turn" in w for w in learned.warnings)
    assert any("no clear_at_least" in w for w in learned.warnings)
    seed_guideline = read_guideline("guidelines/seed/seed.md")
    index, summarize = first_move(seed_guideline, "summarize")
    assert summarize.over * 10 <= COMPACT_DEFAULT_TRIGGER  # the seed's trigger is one to warn about
    seed = export_native(seed_guideline, "anthropic", RETENTION)
    assert [w for w in seed.warnings if f"history[{index}] summarize: compaction trigger {summarize.over:,} " in w]
    openai = export_native(seed_guideline, "openai", RETENTION)
    assert [
        w
        for w in openai.warnings
        if w.startswith(f"history[{index}] summarize: compact_threshold {summarize.over:,} tokens")
        and "almost every request" in w
    ]
    langchain = export_native(read_guideline("guidelines/learned/bfcl_long_context.md"), "langchain", RETENTION)
    assert any("trigger 0 tokens clears on every model call" in w for w in langchain.warnings)


def first_move(guideline, kind: str):
    return next((i, m) for i, m in enumerate(guideline.policy.history) if m.move == kind)


def with_move(guideline, index: int, **update):
    """`guideline` with history[index]'s fields replaced."""
    history = list(guideline.policy.history)
    history[index] = history[index].model_copy(update=update)
    return guideline.model_copy(update={"policy": guideline.policy.model_copy(update={"history": tuple(history)})})


@pytest.mark.parametrize("path", ["guidelines/learned/builtin.md", "guidelines/learned/quickstart.md"])
def test_langchain_warns_on_a_clear_trigger_far_below_its_default(path):
    guideline = read_guideline(path)
    index, clear = first_move(guideline, "clear")
    default = langchain_clear_default()
    assert 0 < clear.trigger_tokens * 10 <= default  # the shipped trigger is one to warn about
    (warning,) = export_native(guideline, "langchain", RETENTION).warnings
    assert warning.startswith(f"history[{index}] clear: trigger {clear.trigger_tokens:,} tokens is a tenth or less")
    assert f"LangChain's default {default:,}" in warning
    assert "clears every few turns" in warning and "rewrites the provider's cached prompt prefix" in warning
    for trigger in (default, 2 * default):
        assert export_native(with_move(guideline, index, trigger_tokens=trigger), "langchain", RETENTION).warnings == []


def test_langchain_warns_on_a_summarize_trigger_far_below_a_working_context():
    guideline = read_guideline("guidelines/seed/seed.md")
    index, summarize = first_move(guideline, "summarize")
    assert summarize.over * 10 <= COMPACT_DEFAULT_TRIGGER
    (warning,) = export_native(guideline, "langchain", RETENTION).warnings
    assert warning.startswith(f'history[{index}] summarize: trigger ["tokens", {summarize.over:,}]: a paid summary')
    assert "SummarizationMiddleware has no default trigger" in warning and f"{COMPACT_DEFAULT_TRIGGER:,}" in warning
    roomy = with_move(guideline, index, over=COMPACT_DEFAULT_TRIGGER)
    assert export_native(roomy, "langchain", RETENTION).warnings == []


@pytest.fixture
def reread_clear_default():
    langchain_clear_default.cache_clear()
    yield
    langchain_clear_default.cache_clear()  # a stand-in's number must not outlive the test


def test_langchain_clear_default_is_read_from_the_installed_package(monkeypatch, reread_clear_default):
    from langchain.agents.middleware import ClearToolUsesEdit

    # The fallback names the installed package's number, so an export without langchain warns alike.
    assert langchain_clear_default() == ClearToolUsesEdit().trigger == LANGCHAIN_CLEAR_DEFAULT_TRIGGER

    @dataclass
    class Moved:
        trigger: int = 40_000

    monkeypatch.setitem(sys.modules, "langchain.agents.middleware", types.SimpleNamespace(ClearToolUsesEdit=Moved))
    langchain_clear_default.cache_clear()
    assert langchain_clear_default() == 40_000
    monkeypatch.setitem(sys.modules, "langchain.agents.middleware", None)  # langchain not installed
    langchain_clear_default.cache_clear()
    assert langchain_clear_default() == LANGCHAIN_CLEAR_DEFAULT_TRIGGER


def test_cli_prints_what_does_not_map_and_writes_the_settings(run_cli, tmp_path):
    retention = tmp_path / "retention.json"
    retention.write_text(json.dumps({"read_doc": "static", "pay": {"side_effect": True}}))
    out = tmp_path / "anthropic.json"
    code, _, err = run_cli(
        "export",
        "guidelines/learned/bfcl_long_context.md",
        "--format",
        "anthropic",
        "--retention",
        str(retention),
        "--out",
        str(out),
    )
    assert code == 0, err
    assert "anthropic: write[0] offload: not mapped: no native write-time stage" in err
    assert "anthropic: history[0] clear: lossy: cleared results are gone for good" in err
    assert "anthropic: lossy export" in err
    assert "anthropic: warning: history[0] clear: trigger 0 input tokens clears on every request" in err
    settings = json.loads(out.read_text())  # the call's keyword arguments, nothing around them
    assert set(settings) == {"betas", "context_management"} and settings["betas"] == ["context-management-2025-06-27"]
    assert settings["context_management"]["edits"][0]["exclude_tools"] == ["pay"]


def test_cli_prints_the_langchain_trigger_warning(run_cli, tmp_path):
    path = "guidelines/learned/builtin.md"
    index, clear = first_move(read_guideline(path), "clear")
    code, _, err = run_cli("export", path, "--format", "langchain", "--out", str(tmp_path / "langchain.json"))
    assert code == 0, err
    assert f"langchain: warning: history[{index}] clear: trigger {clear.trigger_tokens:,} tokens is a tenth" in err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--format", "gemini"], "--format must be md, json, anthropic, openai, langchain"),
        (["--format", "md", "--retention", "x.json"], "--retention applies to --format anthropic|openai|langchain"),
        (["--format", "langchain", "--retention", "missing.json"], "retention file not found"),
    ],
)
def test_cli_refuses_bad_export_options(run_cli, args, says):
    code, _, err = run_cli("export", "guidelines/seed/seed.md", *args)
    assert code == 2 and says in err
