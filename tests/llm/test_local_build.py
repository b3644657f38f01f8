"""Building and starting the embedded llama-server: the build flags, and a binary this CPU cannot run."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from optimizer.errors import AconError
from optimizer.llm.local import install, server
from optimizer.llm.local.profiles import get_profile


def test_the_server_is_built_without_amx_under_a_name_of_its_own(tmp_path, monkeypatch):
    monkeypatch.setenv("ACON_HOME", str(tmp_path))
    monkeypatch.delenv("ACON_LLAMA_SERVER", raising=False)
    tree = tmp_path / "src" / "llama_cpp_python-0.3.36"
    (tree / "vendor" / "llama.cpp").mkdir(parents=True)
    (tree / "vendor" / "llama.cpp" / "CMakeLists.txt").write_text("")
    (tmp_path / "src" / "llama_cpp_python-0.3.36.tar.gz").write_text("")
    commands: list[list[str]] = []

    def run(cmd: list[str], **_: object) -> None:
        commands.append(cmd)
        if "--build" in cmd:
            built = tmp_path / "src" / "build" / "bin" / "llama-server"
            built.parent.mkdir(parents=True)
            built.write_text("binary")

    monkeypatch.setattr(install, "_run", run)
    target = install.build_server(log=lambda _: None)
    configure = next(c for c in commands if "-S" in c)
    assert "-DGGML_AMX_INT8=OFF" in configure and "-DGGML_AMX_TILE=OFF" in configure
    assert f"-DCMAKE_CXX_FLAGS={install.NO_AMX_FLAGS}" in configure
    # A binary cached under the old name (a native build with AMX) is not picked up again.
    assert target.name == install.SERVER_NAME != "llama-server-0.3.36"


def _binary_dying_of(tmp_path: Path, signal_name: str) -> Path:
    (tmp_path / "servers").mkdir(exist_ok=True)
    script = tmp_path / "llama-server"
    script.write_text(f"#!/bin/sh\nkill -{signal_name} $$\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def test_an_illegal_instruction_at_startup_says_what_to_rebuild(tmp_path, monkeypatch):
    monkeypatch.setenv("ACON_HOME", str(tmp_path))
    binary = _binary_dying_of(tmp_path, "ILL")
    monkeypatch.setenv("ACON_LLAMA_SERVER", str(binary))
    monkeypatch.setattr(server, "model_ready", lambda profile: True)
    with pytest.raises(AconError) as info:
        server._launch(get_profile("qwen2.5-coder-0.5b"), str(os.getpid()), log=lambda _: None)
    message = str(info.value)
    assert "illegal instruction" in message and str(binary) in message and "acon setup" in message
    assert "\n" not in message


def test_another_startup_death_reports_its_exit_code(tmp_path, monkeypatch):
    monkeypatch.setenv("ACON_HOME", str(tmp_path))
    monkeypatch.setenv("ACON_LLAMA_SERVER", str(_binary_dying_of(tmp_path, "TERM")))
    monkeypatch.setattr(server, "model_ready", lambda profile: True)
    with pytest.raises(AconError, match="exited with code -15"):
        server._launch(get_profile("qwen2.5-coder-0.5b"), str(os.getpid()), log=lambda _: None)


def test_a_server_is_stopped_by_the_servers_object_that_started_it_not_by_a_nested_one(tmp_path, monkeypatch):
    monkeypatch.setenv("ACON_HOME", str(tmp_path))
    running: dict[str, server.ServerState] = {}
    stopped: list[int] = []

    def launch(profile, owner, log):
        state = server.ServerState(profile.name, 4242, 1, owner, "log", (owner,))
        running[profile.name] = state
        server._write_state(state)
        return state

    monkeypatch.setattr(server, "_launch", launch)
    monkeypatch.setattr(server, "server_status", lambda name: server._read_state(name) if name in running else None)
    monkeypatch.setattr(server, "_terminate", stopped.append)
    with server.LocalServers(log=lambda _: None) as outer:
        outer.base_url("qwen2.5-coder-0.5b")
        for _ in range(3):  # what the probe does per trial: short-lived endpoints inside a long-lived one
            with server.LocalServers(log=lambda _: None) as inner:
                inner.base_url("qwen2.5-coder-0.5b")
        assert stopped == []
    assert stopped == [4242]


def test_an_empty_acon_home_is_unset(monkeypatch):
    from optimizer.llm.local.profiles import acon_home

    monkeypatch.setenv("ACON_HOME", "")
    assert acon_home() == Path.home() / ".cache" / "acon"
