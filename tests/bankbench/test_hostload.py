"""The host-load sampler on real processes: a busy child of the sweep counts as the sweep's,
a busy process named as the server's as the server's, and the host's busy share holds both."""

from __future__ import annotations

import subprocess
import sys

from bankbench.hostload import HostSampler

# Spins until it has used CPU_S of CPU, however long a busy host makes that take. A process's
# last interval before it exits is not seen (it is gone by the next reading): the 0.8 bounds
# below leave two intervals of it.
CPU_S = 2.0
SPIN = f"import time\nwhile time.process_time() < {CPU_S}:\n    pass\n"


def test_the_sweeps_and_the_servers_cpu_are_told_apart():
    # The server spins only once the sampler holds its "before" reading (a line on stdin).
    server = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.readline()\n" + SPIN],
                              stdin=subprocess.PIPE, text=True)
    try:
        with HostSampler([server.pid], interval_s=0.2) as sampler:
            server.stdin.write("go\n")
            server.stdin.flush()
            subprocess.run([sys.executable, "-c", SPIN], check=True)
            server.wait(timeout=120)
    finally:
        server.kill()
    load = sampler.result
    assert load is not None and load.samples >= 1 and load.cpus >= 1
    cpu_seconds = load.seconds * load.cpus
    # each spinner used CPU_S of CPU inside the window (plus its interpreter's start, for the
    # sweep's child), on an idle or a busy host alike
    assert load.client_cpu * cpu_seconds >= 0.8 * CPU_S
    assert load.server_cpu is not None and load.server_cpu * cpu_seconds >= 0.8 * CPU_S
    # the server is a child of this process, as a stack the sweep launched is: counted once,
    # as the server's (the sweep's own share holds only its spinner, no second CPU_S)
    assert load.client_cpu * cpu_seconds < 1.8 * CPU_S
    assert load.cpu_busy >= load.client_cpu + load.server_cpu - 0.05
    assert abs(load.cpu_busy - load.client_cpu - load.server_cpu - load.other_cpu) < 1e-9 \
        or load.other_cpu == 0.0


def test_without_a_server_its_share_is_unknown():
    with HostSampler(None, interval_s=0.1) as sampler:
        pass
    assert sampler.result.server_cpu is None and sampler.result.cpu_busy >= 0


def test_a_resumed_levels_runs_are_combined_by_their_seconds(tmp_path):
    from bankbench.hostload import save
    from contracts.host_load import HOST_LOAD_FILE, HostLoad

    first = HostLoad(cpus=2, seconds=30, samples=30, cpu_busy=1.0, client_cpu=0.2,
                     server_cpu=0.3, other_cpu=0.5, load1_max=4.0)
    second = HostLoad(cpus=2, seconds=90, samples=90, cpu_busy=0.2, client_cpu=0.1,
                      server_cpu=0.1, other_cpu=0.0, load1_max=1.0)
    save(tmp_path, first)
    save(tmp_path, second)
    both = HostLoad.model_validate_json((tmp_path / HOST_LOAD_FILE).read_text())
    assert (both.seconds, both.samples, both.load1_max) == (120, 120, 4.0)
    assert abs(both.cpu_busy - (30 * 1.0 + 90 * 0.2) / 120) < 1e-12
    assert abs(both.other_cpu - 30 * 0.5 / 120) < 1e-12
