"""contracts.atomic.write_atomic: a reader sees the old file or the new one, never half."""

from __future__ import annotations

import os
import stat

import pytest

from contracts.atomic import write_atomic


def test_replaces_the_file_whole_with_a_plain_write_mode(tmp_path):
    path = tmp_path / "sweep.json"
    path.write_text("old")
    write_atomic(path, "new ✓")
    assert path.read_text(encoding="utf-8") == "new ✓"
    write_atomic(path, b"\x00bytes")
    assert path.read_bytes() == b"\x00bytes"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    assert [p.name for p in tmp_path.iterdir()] == ["sweep.json"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "state.json"
    path.write_text("old")

    def fail(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        write_atomic(path, "new")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]
