"""The run directory of a sweep, a multi-router sweep and a capacity search: claimed, locked,
the two refusals, and no half-made directory left by a new run that failed early."""

from __future__ import annotations

import fcntl
import os

import pytest

from bankbench.sweep import lock
from bankbench.sweep.errors import SweepError
from bankbench.sweep.output_dir import locked_output
from contracts.sweep import ROUTERS_FILE, SWEEP_FILE


def test_a_new_run_gets_its_directory_and_a_default_name_is_never_shared(tmp_path):
    with locked_output(tmp_path / "s", resume=False) as first:
        assert first.path == (tmp_path / "s").resolve() and first.created
        first.keep()
    with locked_output(tmp_path / "s", resume=False, claim=True) as second:
        assert second.path.name == "s-2"
        second.keep()
    assert (tmp_path / "s").is_dir() and (tmp_path / "s-2").is_dir()


def test_resuming_a_directory_that_is_not_there_is_refused(tmp_path):
    with pytest.raises(SweepError, match="no such sweep directory"):
        with locked_output(tmp_path / "gone", resume=True):
            pass
    assert not (tmp_path / "gone").exists()


@pytest.mark.parametrize("record", [SWEEP_FILE, ROUTERS_FILE])
def test_a_new_run_where_a_run_is_recorded_is_refused_and_the_record_kept(tmp_path, record):
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / record).write_text("{}")
    with pytest.raises(SweepError, match=r"already holds a sweep; continue it with --resume"):
        with locked_output(tmp_path / "s", resume=False):
            pytest.fail("the body must not run")
    assert (tmp_path / "s" / record).read_text() == "{}"
    with locked_output(tmp_path / "s", resume=True) as out:  # resuming it is the way on
        assert not out.created


def test_a_directory_another_process_holds_is_refused_naming_the_holder(tmp_path):
    (tmp_path / "s").mkdir()
    fd = os.open(tmp_path / "s" / lock.LOCK_FILE, os.O_RDWR | os.O_CREAT)
    os.write(fd, b'{"pid": 4242, "started": "then"}')
    fcntl.flock(fd, fcntl.LOCK_EX)  # another open file description: as another process
    try:
        for resume, hint in ((True, "kill -INT"), (False, "choose another --name")):
            with pytest.raises(SweepError, match=f"in use by a running sweep \\(pid 4242.*{hint}"):
                with locked_output(tmp_path / "s", resume=resume):
                    pass
    finally:
        os.close(fd)


def test_a_new_run_failing_before_its_record_leaves_nothing_and_after_it_keeps_all(tmp_path):
    with pytest.raises(RuntimeError):
        with locked_output(tmp_path / "early", resume=False):
            raise RuntimeError("the server did not come up")
    assert not (tmp_path / "early").exists()
    with pytest.raises(KeyboardInterrupt):
        with locked_output(tmp_path / "late", resume=False) as out:
            (out.path / SWEEP_FILE).write_text("{}")
            out.keep()
            raise KeyboardInterrupt
    assert (tmp_path / "late" / SWEEP_FILE).exists()
    (tmp_path / "mine").mkdir()  # a directory the user made is never removed
    with pytest.raises(RuntimeError):
        with locked_output(tmp_path / "mine", resume=False):
            raise RuntimeError
    assert (tmp_path / "mine").is_dir()
