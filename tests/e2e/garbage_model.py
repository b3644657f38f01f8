"""A pytest plugin: every local-model request is answered with fluent, useless text.

`tests/e2e/test_llm_tests_can_fail.py` runs the `llm` tests under it; each must fail. The replies are
well-formed chat completions with usage, so only the tests' checks of what the model wrote can fail them.
"""

from __future__ import annotations

from optimizer.llm.local.server import LocalServers
from optimizer.testing.stub_server import StubServer

GARBAGE = "Sure! Everything went well and the task is done. Let me know if you need anything else."

_server: StubServer | None = None


def pytest_configure(config) -> None:
    global _server
    _server = StubServer(lambda request: GARBAGE)
    url = _server.__enter__()
    LocalServers.base_url = lambda self, profile_name: url  # every local role, every test


def pytest_unconfigure(config) -> None:
    if _server is not None:
        _server.__exit__(None, None, None)
