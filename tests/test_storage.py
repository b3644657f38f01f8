"""Atomic writes replace a regular file or create one; anything else at the path is refused in one line."""

from __future__ import annotations

import os
import stat

import pytest

from optimizer.errors import AconError, ConfigError
from optimizer.storage import atomic_write_text


def test_a_file_is_created_or_replaced_whole(tmp_path):
    target = tmp_path / "deep" / "out.txt"
    atomic_write_text(target, "one")
    atomic_write_text(target, "two")
    assert target.read_text() == "two" and os.listdir(target.parent) == ["out.txt"]


def test_a_symlink_is_written_through_to_its_file(tmp_path):
    (tmp_path / "real.txt").write_text("old")
    (tmp_path / "link.txt").symlink_to(tmp_path / "real.txt")
    atomic_write_text(tmp_path / "link.txt", "new")
    assert (tmp_path / "link.txt").is_symlink() and (tmp_path / "real.txt").read_text() == "new"


def test_a_directory_or_a_pipe_is_never_replaced(tmp_path):
    # As root, os.replace turned /dev/full into a regular file; a FIFO stands in for a device here.
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "pipe")
    for target, kind in ((tmp_path / "dir", "a directory"), (tmp_path / "pipe", "a named pipe")):
        with pytest.raises(ConfigError, match=f"{target} is {kind}, not a regular file") as info:
            atomic_write_text(target, "x")
        assert "\n" not in str(info.value)
    assert (tmp_path / "dir").is_dir() and stat.S_ISFIFO((tmp_path / "pipe").stat().st_mode)
    assert sorted(os.listdir(tmp_path)) == ["dir", "pipe"]  # no temporary file left behind


def test_a_path_under_a_file_is_one_line(tmp_path):
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(AconError, match="cannot write") as info:
        atomic_write_text(tmp_path / "a-file" / "out.txt", "x")
    assert str(tmp_path / "a-file" / "out.txt") in str(info.value) and "\n" not in str(info.value)
