"""`compact()` is incremental: the requests are the ones the full rebuild made, for work proportional to what is new.

The requests a 300-step conversation gets under every shipped guideline and strategy were recorded from the
algorithm that replayed, re-tokenized and re-rendered the whole history at every call
(`data/compact_requests.json`, digests by `long_conversation.digest`); the incremental runtime must send the
same ones. The work a call does is counted, not timed: tokenizations, fingerprints, call signatures,
entries replayed, entries rendered and entries a history move weighs per call must not grow with the conversation.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path
from typing import ClassVar

import pytest

from optimizer.context.compressor import Compressor
from optimizer.context.history import replay
from optimizer.context.strategies import parse_strategy
from optimizer.llm.client import ChatClient
from optimizer.llm.endpoint import EndpointConfig
from optimizer.runtime import ContextRuntime
from optimizer.runtime.render import render_messages
from optimizer.testing.scripted import scripted_models
from optimizer.testing.stub_server import StubServer
from tests.conftest import ROOT
from tests.runtime.long_conversation import RETENTION, digest, opening, steps

RECORDED = json.loads((Path(__file__).parent / "data" / "compact_requests.json").read_text())


@pytest.fixture(scope="module")
def compressor():
    with StubServer(scripted_models) as url:
        config = EndpointConfig(base_url=url, model="scripted", backoff_s=0.0)
        yield Compressor(ChatClient(config, base_url=url, model="scripted"))


def runtime_for(case: str, compressor: Compressor) -> ContextRuntime:
    guideline = ROOT / case if case.endswith(".md") else parse_strategy(case)
    return ContextRuntime(guideline, retention=RETENTION, compressor=compressor)


@pytest.mark.parametrize("case", sorted(RECORDED["requests"]))
def test_every_request_is_the_one_the_full_rebuild_sent(case, compressor):
    name, tool_format = case.rsplit(" ", 1)
    runtime = runtime_for(name, compressor)
    messages = opening()
    sent = []
    for added in steps(RECORDED["steps"]):
        messages += added
        sent.append(digest(runtime.compact(messages, tool_format=tool_format)))
    first = next((i for i, (a, b) in enumerate(zip(sent, RECORDED["requests"][case], strict=True)) if a != b), None)
    assert first is None, f"{case}: request {first} differs from the recorded one"


@pytest.mark.parametrize("case", ["guidelines/learned/bfcl_long_context.md", "guidelines/seed/seed.md", "llm_history"])
def test_the_kept_view_is_what_replaying_everything_gives(case, compressor):
    runtime = runtime_for(case, compressor)
    messages = opening()
    for added in steps(150):
        messages += added
        sent = runtime.compact(messages, tool_format="json")
        history = runtime.history
        view = replay(history.entries, history.edits)
        assert history.replay() == view
        assert history.view_tokens() == sum(e.tokens for e in view)
        assert sent == render_messages(messages[0]["content"], view, native_tools=False)


class _CountingEncoding:
    def __init__(self, encoding, counts: Counter) -> None:
        self._encoding, self._counts = encoding, counts

    def encode_ordinary(self, text: str) -> list[int]:
        self._counts["tokenized"] += 1
        return self._encoding.encode_ordinary(text)

    def __getattr__(self, name: str):
        return getattr(self._encoding, name)


def work_per_call(monkeypatch, case: str, compressor: Compressor, at: tuple[int, ...]) -> dict[int, Counter]:
    """What each compact() call at the steps `at` did, counted."""
    import optimizer.context.moves.clear as clear_module
    import optimizer.context.moves.mask as mask_module
    import optimizer.runtime.messages as messages_module
    import optimizer.runtime.render as render_module
    import optimizer.tokens as tokens_module
    from optimizer.world.tool import ToolCall

    counts: ClassVar[Counter] = Counter()  # set per test
    encoding = tokens_module._encoding()
    monkeypatch.setattr(tokens_module, "_encoding", lambda: _CountingEncoding(encoding, counts))

    def counted(name, function):
        def wrapper(*args, **kwargs):
            counts[name] += 1
            return function(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(messages_module, "fingerprint", counted("fingerprinted", messages_module.fingerprint))
    monkeypatch.setattr(render_module, "entry_messages", counted("rendered", render_module.entry_messages))
    monkeypatch.setattr(ToolCall, "signature", counted("signatures", ToolCall.signature))
    monkeypatch.setattr(dataclasses, "replace", counted("entries rebuilt", dataclasses.replace))
    for move in (clear_module, mask_module):  # each imported `clearable` by name
        monkeypatch.setattr(move, "clearable", counted("weighed", move.clearable))
    runtime = runtime_for(case, compressor)
    messages = opening()
    per_call: dict[int, Counter] = {}
    for step, added in enumerate(steps(max(at) + 1)):
        messages += added
        counts.clear()
        runtime.compact(messages)
        if step in at:
            per_call[step] = Counter(counts)
    return per_call


FLAT = [
    "guidelines/learned/bfcl_long_context.md",
    "guidelines/learned/builtin_cost.md",
    "mask_last_n",
    "fifo",
    "offload_preview",
]
# `clear` weighs, at every call, each small result it may clear against its placeholder, which names the next
# free recall handle: that handle moves as the store grows, so the placeholder is tokenized again. Left as is
# (the comparison is the move's rule); every other kind of work is flat under these too.
WEIGHS_SMALL_RESULTS = ["guidelines/learned/builtin.md", "guidelines/learned/quickstart.md", "clear_tool_uses"]


# `mask` weighs at every call each result outside its window that it may never mask (a pinned or unclassified
# one, the latest read of a state), so those weighings grow with such results (21 -> 72 here); not the actions,
# nor the results masked already.
WEIGHS_KEPT_RESULTS = ["mask_last_n"]


@pytest.mark.parametrize("case", FLAT + WEIGHS_SMALL_RESULTS)
def test_the_work_of_a_call_does_not_grow_with_the_conversation(monkeypatch, case, compressor):
    # Steps 110 and 430 add a page read of the same length into a conversation four times longer; the full
    # rebuild did about four times the work at the later one.
    per_call = work_per_call(monkeypatch, case, compressor, at=(110, 430))
    early, late = per_call[110], per_call[430]
    assert early["tokenized"] > 0 and early["rendered"] > 0
    kinds = ["fingerprinted", "signatures", "rendered", "entries rebuilt"]
    if case not in WEIGHS_SMALL_RESULTS:
        kinds.append("tokenized")
    if case not in WEIGHS_SMALL_RESULTS + WEIGHS_KEPT_RESULTS:
        kinds.append("weighed")
    for kind in kinds:
        assert late[kind] <= early[kind] + 2, f"{case}: {kind} per call grew from {early[kind]} to {late[kind]}"


class _ComparedMessage(dict):
    """A message that counts how often it is compared: reading every earlier message shows here."""

    counts: ClassVar[Counter] = Counter()  # set per test

    def __eq__(self, other: object) -> bool:
        self.counts["messages compared"] += 1
        return dict.__eq__(self, other)

    __hash__ = None  # type: ignore[assignment]  # as dict's


class _ReadTexts(dict):
    """The assistants' texts a runtime keeps, counting each one read."""

    counts: ClassVar[Counter] = Counter()  # set per test

    def get(self, key, default=None):
        self.counts["texts read"] += 1
        return dict.get(self, key, default)

    def __getitem__(self, key):
        self.counts["texts read"] += 1
        return dict.__getitem__(self, key)

    def items(self):
        for pair in dict.items(self):
            self.counts["texts read"] += 1
            yield pair


def reads_per_call(monkeypatch, case: str, compressor: Compressor, at: tuple[int, ...]) -> dict[int, Counter]:
    """What each native compact() call at the steps `at` read of what earlier calls had already handled."""
    import optimizer.context.history as history_module

    counts: ClassVar[Counter] = Counter()  # set per test
    monkeypatch.setattr(_ComparedMessage, "counts", counts)
    monkeypatch.setattr(_ReadTexts, "counts", counts)
    fork = history_module._ReplayedView.fork

    def counted_fork(view):
        counts["view entries copied"] += len(view.view)
        return fork(view)

    monkeypatch.setattr(history_module._ReplayedView, "fork", counted_fork)
    runtime = runtime_for(case, compressor)
    runtime._seen.texts = _ReadTexts()
    messages = [_ComparedMessage(m) for m in opening()]
    per_call: dict[int, Counter] = {}
    for step, added in enumerate(steps(max(at) + 1)):
        messages += [_ComparedMessage(m) for m in added]
        counts.clear()
        runtime.compact(messages)
        if step in at:
            per_call[step] = Counter(counts)
    return per_call


@pytest.mark.parametrize("case", ["guidelines/learned/bfcl_long_context.md", "mask_last_n", "clear_tool_uses"])
def test_a_call_reads_what_is_new_not_the_messages_handled_before(monkeypatch, case, compressor):
    # The conversation at step 430 is four times the one at 110; the same kind of step is added at both.
    # Comparing every earlier message, placing every assistant text and copying the replayed view for each
    # move that edits grew with it (about four times the reads at 430); now they must not.
    per_call = reads_per_call(monkeypatch, case, compressor, at=(110, 430))
    early, late = per_call[110], per_call[430]
    assert early["messages compared"] > 0  # the last message seen is compared in full at every call
    for kind in ("messages compared", "texts read", "view entries copied"):
        assert late[kind] <= early[kind] + 2, f"{case}: {kind} per call grew from {early[kind]} to {late[kind]}"


def messages_built_per_call(case: str, compressor: Compressor, at: tuple[int, ...], tool_format: str) -> dict[int, int]:
    """How many messages of the request at each step in `at` are not objects the request before it held."""
    runtime = runtime_for(case, compressor)
    messages = opening()
    built: dict[int, int] = {}
    before: list[dict] = []
    for step, added in enumerate(steps(max(at) + 1)):
        messages += added
        sent = runtime.compact(messages, tool_format=tool_format)
        if step in at:
            held = {id(message) for message in before}
            built[step] = sum(id(message) not in held for message in sent)
        before = sent
    return built


@pytest.mark.parametrize("tool_format", ["native", "json"])
@pytest.mark.parametrize("case", ["guidelines/learned/bfcl_long_context.md", "mask_last_n", "clear_tool_uses"])
def test_a_call_builds_the_messages_that_changed_not_a_copy_of_every_message(case, tool_format, compressor):
    # A fresh copy of every message handed back was what a call still paid for the whole conversation (about
    # 1 microsecond per message, and the garbage collection those copies set off); a JSON-mode request also
    # merged every message again.
    built = messages_built_per_call(case, compressor, at=(110, 430), tool_format=tool_format)
    assert built[110] > 0 and built[430] <= built[110] + 2, f"{case} ({tool_format}): messages built per call {built}"
