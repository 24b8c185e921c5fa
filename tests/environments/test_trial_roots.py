"""Where trial folders go, and the removal of those whose harness is gone."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from environments import trial_roots
from environments.trial_roots import TrialOwner

OWN_NS = os.readlink("/proc/self/ns/pid")


def _dead_process() -> tuple[int, int]:
    """(pid, start time) of a process that has ended."""
    child = subprocess.Popen(["sleep", "30"])
    started = trial_roots.process_start(child.pid)
    child.kill()
    child.wait()
    assert started is not None and trial_roots.process_start(child.pid) is None
    return child.pid, started


def _folder(base: Path, name: str, owner: TrialOwner | None) -> Path:
    folder = base / name
    (folder / "root" / "app").mkdir(parents=True)
    (folder / "root" / "app" / "f").write_text("x")
    if owner is not None:
        (folder / trial_roots.OWNER_FILE).write_text(owner.model_dump_json())
    return folder


def test_only_folders_of_a_gone_harness_not_kept_are_removed(tmp_path):
    base = trial_roots.prepare_base(tmp_path / "roots")
    dead_pid, dead_started = _dead_process()
    ours = _folder(base, "live", None)
    trial_roots.record_owner(ours)
    gone = _folder(base, "gone", TrialOwner(pid=dead_pid, started=dead_started,
                                            pid_namespace=OWN_NS))
    kept = _folder(base, "kept", TrialOwner(pid=dead_pid, started=dead_started,
                                            pid_namespace=OWN_NS, keep=True))
    elsewhere = _folder(base, "other-namespace", TrialOwner(
        pid=dead_pid, started=dead_started, pid_namespace="pid:[1]"))
    unknown = _folder(base, "no-record", None)
    # this very pid, but another process's start time: the pid was reused
    reused = _folder(base, "reused", TrialOwner(
        pid=os.getpid(), started=trial_roots.process_start(os.getpid()) - 1,
        pid_namespace=OWN_NS))

    assert sorted(trial_roots.remove_leftovers(base)) == sorted([gone, reused])
    assert not gone.exists() and not reused.exists()
    assert ours.is_dir() and kept.is_dir() and unknown.is_dir() and elsewhere.is_dir()


def test_a_base_others_can_write_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(ValueError, match="writable by nobody else"):
        trial_roots.prepare_base(shared)
    assert (trial_roots.prepare_base(tmp_path / "new").stat().st_mode & 0o777) == 0o700


@pytest.mark.skipif(os.geteuid() != 0, reason="handing a folder to another uid needs root")
def test_a_base_of_another_user_is_refused(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, 65534, 65534)
    with pytest.raises(ValueError, match="owned by uid 0"):
        trial_roots.prepare_base(theirs)


def test_the_default_base_is_a_memory_folder_when_one_is_usable(tmp_path):
    assert trial_roots.default_base((tmp_path,)) == tmp_path / trial_roots.BASE_NAME
    fallback = Path(tempfile.gettempdir()) / trial_roots.BASE_NAME
    assert trial_roots.default_base((tmp_path / "missing",)) == fallback


def test_a_memory_folder_too_small_for_a_sweep_is_passed_over(tmp_path):
    fallback = Path(tempfile.gettempdir()) / trial_roots.BASE_NAME
    assert trial_roots.default_base((tmp_path,), min_free=1 << 62) == fallback
    assert trial_roots.default_base((tmp_path,), min_free=1) == tmp_path / trial_roots.BASE_NAME


def test_a_folder_deleted_while_the_base_is_read_is_passed_over(tmp_path, monkeypatch):
    # Another harness sharing the base (every job's default on /dev/shm) deletes its trial's
    # folder between our listing and our look at it: that is no reason to fail our start.
    base = trial_roots.prepare_base(tmp_path / "roots")
    dead_pid, dead_started = _dead_process()
    vanishing = _folder(base, "vanishing", None)
    gone = _folder(base, "gone", TrialOwner(pid=dead_pid, started=dead_started,
                                            pid_namespace=OWN_NS))
    listed = list(os.scandir(base))
    trial_roots.remove_tree(vanishing)
    monkeypatch.setattr(trial_roots.os, "scandir", lambda _: iter(listed))
    assert trial_roots.remove_leftovers(base) == [gone]
