"""bankbench.procs: the one process supervisor of serve and sweep (psutil)."""

from __future__ import annotations

import os
import signal
import sys
import time

from bankbench import procs
from bankbench.sweep import harbor_job

IGNORE_TERM = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
               "print('ready', flush=True); time.sleep(300)")


def _wait_ready(log, timeout=20.0):
    deadline = time.monotonic() + timeout
    while "ready" not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline, "child never started"
        time.sleep(0.05)


def test_ladder_escalates_when_a_member_ignores_the_first_signal(tmp_path):
    log = tmp_path / "c.log"
    pid = procs.start([sys.executable, "-c", IGNORE_TERM], dict(os.environ), log)
    _wait_ready(log)
    t0 = time.perf_counter_ns()
    procs.stop_group(pid, ((signal.SIGTERM, 1.0), (signal.SIGKILL, 5.0)),
                     started=procs.start_time(pid))
    waited_s = (time.perf_counter_ns() - t0) / 1e9
    assert not procs.group_alive(pid) and not procs.is_alive(pid)
    assert waited_s >= 1.0  # SIGTERM was tried (and ignored) before SIGKILL
    assert procs.exit_code(pid) == -signal.SIGKILL


def _sig_set(pid: int, field: str) -> set[int]:
    """The signals in a /proc status mask (SigIgn, SigBlk) of a process."""
    line = next(ln for ln in open(f"/proc/{pid}/status") if ln.startswith(field + ":"))
    mask = int(line.split()[1], 16)
    return {n for n in range(1, 65) if mask >> (n - 1) & 1}


def test_a_child_is_stopped_by_sigint_though_this_process_ignores_and_blocks_it(tmp_path):
    """Started from a process that ignores SIGINT (a shell's background job) and blocks the
    stop signals (a Ray worker), a child still gets them as a stop: the ladder's first rung
    ends it, not the next one after the first one's whole wait."""
    stops = {signal.SIGINT, signal.SIGTERM}
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, stops)
    try:
        proc = procs.spawn(["sleep", "300"], tmp_path / "s.log")
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        signal.signal(signal.SIGINT, old)
    try:
        # Popen returns once the child has exec'd: these are sleep's own dispositions.
        assert not stops & (_sig_set(proc.pid, "SigIgn") | _sig_set(proc.pid, "SigBlk"))
        procs.stop_group(proc.pid, ((signal.SIGINT, 60.0),))
        assert not procs.group_alive(proc.pid)
        assert procs.exit_code(proc.pid) == -signal.SIGINT
    finally:
        procs.stop_group(proc.pid, ((signal.SIGKILL, 5.0),))


def test_the_whole_group_stops_not_just_the_leader(tmp_path):
    log = tmp_path / "g.log"
    pid = procs.start(["sh", "-c", "sleep 300 & sleep 300 & echo ready; wait"],
                      dict(os.environ), log)
    _wait_ready(log)
    assert len(procs.group_members(pid)) == 3
    procs.stop_group(pid)
    assert procs.group_members(pid) == []


def test_a_stranger_holding_a_recorded_pid_is_left_alone():
    me = os.getpid()
    procs.stop_group(me, started=(procs.start_time(me) or 0) + 1)  # would kill pytest otherwise
    assert procs.is_alive(me)


def test_tail_reads_the_end_and_tolerates_missing_files(tmp_path):
    log = tmp_path / "x.log"
    log.write_text("".join(f"line {i}\n" for i in range(5000)))
    assert procs.tail(log, 2) == "line 4998\nline 4999"
    assert procs.tail(tmp_path / "none.log") == "" and procs.tail(None) == ""
    assert harbor_job.tail(tmp_path / "none.log") == "(no log)"


def test_harbor_of_an_earlier_run_is_found_by_its_jobs_dir(tmp_path):
    # A stand-in with Harbor's name: what matters is its command line, as with the real one
    # (a Python entry script: argv = [python, .../harbor, run, … --jobs-dir DIR]).
    script = tmp_path / "bin" / "harbor"
    script.parent.mkdir()
    # Python, like Harbor's entry script, and no child: a shell's forked child carries the
    # shell's command line until it execs, which would match too.
    script.write_text(f"#!{sys.executable}\nimport time\nprint('ready', flush=True)\n"
                      "time.sleep(300)\n")
    script.chmod(0o755)
    sweep = tmp_path / "sweep"
    other_log, log = tmp_path / "o.log", tmp_path / "h.log"
    other = procs.spawn([str(script), "run", "--jobs-dir", str(tmp_path / "other")], other_log)
    proc = procs.spawn([str(script), "run", "--jobs-dir", str(sweep)], log)
    try:
        _wait_ready(log)
        _wait_ready(other_log)
        assert harbor_job.harbor_processes_in(sweep) == [proc.pid]
    finally:
        harbor_job.stop_process_group(proc)
        harbor_job.stop_process_group(other)
    assert proc.poll() is not None and not procs.group_alive(proc.pid)
    assert harbor_job.harbor_processes_in(sweep) == []


def test_a_port_is_free_once_its_listener_closed_though_its_connections_linger():
    """A stopped server whose side closed its connections first leaves them in TIME_WAIT; a
    new server (SO_REUSEADDR, as servers bind) can listen at once, and the check agrees."""
    import socket

    from bankbench import procs

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    assert not procs.port_is_free(port)  # something listens
    client = socket.create_connection(("127.0.0.1", port))
    conn, _ = listener.accept()
    conn.close()  # the server's side closes first: its end lingers in TIME_WAIT
    client.recv(1)
    client.close()
    listener.close()
    assert procs.port_is_free(port)
    socket.create_server(("127.0.0.1", port)).close()  # what a server does: it can
