"""A full logging sequence tries no network connection and no name lookup beyond this machine."""

from __future__ import annotations

import socket

import pytest

from optimizer.context.prompt_registry import load_from_registry
from optimizer.tracking import ParetoPoint
from optimizer.tracking.mlflow_tracker import MlflowTracker
from optimizer.tracking.store import job_store
from tests.tracking.conftest import make_episode, make_guideline

LOCAL_NAMES = {"localhost", "127.0.0.1", "::1", "", None}


def _is_local(address) -> bool:
    if not isinstance(address, tuple):
        return True  # AF_UNIX path
    host = address[0]
    return host in LOCAL_NAMES or str(host).startswith("127.")


@pytest.fixture
def no_network(monkeypatch):
    """Refuse (and record) every connection or lookup that would leave the machine."""
    attempts: list[str] = []
    real_connect, real_connect_ex, real_getaddrinfo = (
        socket.socket.connect,
        socket.socket.connect_ex,
        socket.getaddrinfo,
    )

    def connect(self, address):
        if not _is_local(address):
            attempts.append(f"connect {address}")
            raise OSError(f"network disabled in this test: {address}")
        return real_connect(self, address)

    def connect_ex(self, address):
        if not _is_local(address):
            attempts.append(f"connect_ex {address}")
            return 101  # ENETUNREACH
        return real_connect_ex(self, address)

    def getaddrinfo(host, *args, **kwargs):
        if host not in LOCAL_NAMES and not str(host).startswith("127."):
            attempts.append(f"getaddrinfo {host}")
            raise socket.gaierror(f"network disabled in this test: {host}")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return attempts


def test_full_logging_sequence_stays_offline(job_dir, no_network):
    store = job_store(job_dir)
    tracker = MlflowTracker(store, job_dir, "offline")
    seed, better = make_guideline(), make_guideline("Keep ids, errors, amounts and dates.", name="r1")
    with tracker.job_run("optimize", params={"seed": 0}, tags={"suite": "smoke"}):
        with tracker.child_run("round-1", "round 1"):
            tracker.log_metrics({"success": 0.5, "peak_tokens_mean": 900}, step=1)
            for i in range(3):
                tracker.trace_episode(make_episode(f"t-{i}"))
            tracker.log_guideline(better, round=1)
            tracker.log_guideline_diff(seed, better)
            tracker.log_pair_diff("t-0", "<p>diff</p>", "- missing ORD-1", round=1)
            tracker.log_table([{"task_id": "t-0", "success": False}], "tables/pairs.json")
        points = [ParetoPoint("none", 1.0, 2000, baseline=True), ParetoPoint("r1", 0.9, 900)]
        tracker.log_pareto(points, round=1)
        tracker.register_guideline(seed)
        tracker.set_best(better)
        tracker.log_report("# report", {"chosen": better.version})
    tracker.flush()
    assert load_from_registry("acon-offline@best", store.uri) == better
    assert no_network == []


def test_the_guard_sees_outside_connections(no_network):
    with pytest.raises(OSError):
        socket.create_connection(("example.com", 443), timeout=1)
    with pytest.raises(OSError), socket.socket() as sock:
        sock.connect(("192.0.2.1", 80))
    assert no_network == ["getaddrinfo example.com", "connect ('192.0.2.1', 80)"]
