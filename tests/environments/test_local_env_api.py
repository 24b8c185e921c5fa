"""LocalEnvironment through Harbor's environment API: files, exec, timeouts, isolation, errors."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from localenv_helpers import IS_ROOT, gone_within, holder_pids, process_gone, read_pid

import environments.local as local
import environments.root_layout as root_layout
from environments.execution import TIMEOUT_EXIT_CODE
from environments.host_tools import NamespaceUnavailableError, probe_host_tools

pytestmark = pytest.mark.timeout(120)


async def test_environment_folder_becomes_app_and_the_working_directory(make_env):
    env = make_env()
    await env.start(force_build=False)
    result = await env.exec("pwd && ./hello world && cat data/table.csv")
    assert result.return_code == 0, result.stderr
    assert result.stdout == "/app\nhello ['world']\na,b\n1,2\n"


async def test_host_system_dirs_are_read_only_and_the_root_is_private(make_env):
    env = make_env()
    await env.start(force_build=False)
    result = await env.exec("touch /usr/localenv-probe; echo x > /etc/localenv-probe")
    assert result.return_code != 0
    assert "Read-only file system" in (result.stderr or "")
    assert not Path("/usr/localenv-probe").exists() and not Path("/etc/localenv-probe").exists()
    listing = await env.exec("ls /logs /tmp /tests /solution")
    assert listing.return_code == 0 and "agent\nartifacts\nverifier" in listing.stdout
    # The agent's user writes only its scratch and log folders; Harbor's root steps anywhere.
    refused = await env.exec("mkdir /scratch || touch /app/x || touch /logs/verifier/x")
    assert refused.return_code != 0 and "Permission denied" in (refused.stderr or "")
    made = await env.exec("mkdir /scratch && echo kept > /scratch/f && cat /scratch/f",
                          user="root")
    assert made.stdout == "kept\n"
    assert (env.root / "scratch" / "f").read_text() == "kept\n"
    scratch = await env.exec("echo t > /tmp/t && echo s > /dev/shm/s && cat /tmp/t /dev/shm/s")
    assert scratch.stdout == "t\ns\n"
    assert (env.view / "tmp" / "t").read_text() == "t\n" and not (env.root / "tmp" / "t").exists()


async def test_exec_honours_cwd_env_and_keeps_host_variables_out(make_env, monkeypatch):
    monkeypatch.setenv("LOCALENV_HOST_SECRET", "must-not-leak")
    env = make_env()
    await env.start(force_build=False)
    result = await env.exec(
        'pwd; echo "$GREETING"; echo "${LOCALENV_HOST_SECRET:-absent}"',
        cwd="/logs/agent",
        env={"GREETING": "hello 'quoted' $world"},
    )
    assert result.stdout == "/logs/agent\nhello 'quoted' $world\nabsent\n"
    missing = await env.exec("true", cwd="/no/such/dir")
    assert missing.return_code != 0 and "/no/such/dir" in (missing.stderr or "")


async def test_upload_and_download_map_to_the_private_root(make_env, tmp_path):
    env = make_env()
    await env.start(force_build=False)
    source = tmp_path / "upload"
    (source / "nested").mkdir(parents=True)
    (source / "test.sh").write_text("echo tests\n")
    (source / "nested" / "expected.json").write_text('{"x": 1}')
    await env.upload_dir(source, "/tests")
    await env.upload_file(source / "test.sh", "/solution/solve.sh")
    await env.upload_file(source / "test.sh", "/tmp/")
    seen = await env.exec("cat /tests/nested/expected.json /solution/solve.sh /tmp/test.sh")
    assert seen.stdout == '{"x": 1}echo tests\necho tests\n'

    await env.exec("echo '{\"tsq\": 1.0}' > /logs/verifier/reward.json && mkfifo /logs/verifier/p",
                   user="root")
    out = tmp_path / "downloaded"
    await env.download_dir("/logs/verifier", out)
    assert (out / "reward.json").read_text() == '{"tsq": 1.0}\n'
    assert not (out / "p").exists()  # a FIFO would hang a copy; it is skipped
    await env.download_file("/tests/nested/expected.json", out / "one" / "e.json")
    assert (out / "one" / "e.json").read_text() == '{"x": 1}'
    with pytest.raises(FileNotFoundError):
        await env.download_file("/logs/agent/nothing.txt", out / "nothing.txt")


async def test_paths_cannot_leave_the_root_and_system_dirs_refuse_uploads(make_env, tmp_path):
    env = make_env()
    await env.start(force_build=False)
    secret = tmp_path / "secret.txt"
    secret.write_text("host only")
    # A link resolves inside the root, as it would for the agent: the host file is not there.
    await env.exec(f"ln -s {secret} /logs/agent/escape && ln -s ../../../../.. /logs/agent/up")
    with pytest.raises(FileNotFoundError):
        await env.download_file("/logs/agent/escape", tmp_path / "escape")
    with pytest.raises(FileNotFoundError):
        await env.download_file(f"/logs/agent/up{secret}", tmp_path / "up")
    host_file = tmp_path / "f.txt"
    host_file.write_text("x")
    with pytest.raises(PermissionError, match="read-only"):
        await env.upload_file(host_file, "/usr/f.txt")
    # `..` is resolved inside the root, never above it
    await env.upload_file(host_file, "/../../logs/agent/f.txt")
    assert (env.view / "logs" / "agent" / "f.txt").exists()


async def test_timeout_kills_the_whole_process_group(make_env):
    env = make_env()
    await env.start(force_build=False)
    result = await env.exec(
        "sleep 300 & echo $! > /tmp/child.pid; echo started; wait", timeout_sec=2
    )
    assert result.return_code == TIMEOUT_EXIT_CODE
    assert "timed out after 2 s" in (result.stderr or "")
    assert result.stdout == "started\n"  # output before the timeout is kept
    read_pid(env.view, "/tmp/child.pid")
    assert gone_within(env.processes)


async def test_cancellation_kills_the_running_command(make_env):
    env = make_env()
    await env.start(force_build=False)
    running = asyncio.create_task(env.exec("sleep 300 & echo $! > /tmp/child.pid; wait"))
    await asyncio.to_thread(read_pid, env.view, "/tmp/child.pid")
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert gone_within(env.processes)


async def test_background_jobs_outlive_their_command_until_stop(make_env):
    env = make_env()
    await env.start(force_build=False)
    started = await env.exec("sleep 300 >/dev/null 2>&1 & echo $!")
    assert started.return_code == 0
    [pid] = env.processes()  # its host pid (the one printed is the trial's own)
    assert not process_gone(pid, within_sec=0.3)  # like a container, it keeps running
    root = env.root
    await env.stop(delete=True)
    assert process_gone(pid)
    assert not root.parent.exists()


async def test_stop_keeps_the_root_when_asked(make_env):
    kept_by_flag = make_env("a")
    kept_by_option = make_env("b", keep=True)
    for env in (kept_by_flag, kept_by_option):
        await env.start(force_build=False)
    await kept_by_flag.stop(delete=False)
    await kept_by_option.stop(delete=True)
    assert (kept_by_flag.root / "app" / "hello").exists()
    assert (kept_by_option.root / "app" / "hello").exists()


async def test_concurrent_environments_do_not_share_files(make_env):
    first, second = make_env("first"), make_env("second")
    await asyncio.gather(first.start(force_build=False), second.start(force_build=False))
    write = "echo {0} > /tmp/owner && echo {0} > /logs/agent/{0}.txt && sleep 0.5 && cat /tmp/owner"
    one, two = await asyncio.gather(
        first.exec(write.format("one")), second.exec(write.format("two"))
    )
    assert (one.stdout, two.stdout) == ("one\n", "two\n")
    assert (await first.exec("ls /logs/agent")).stdout == "one.txt\n"
    assert (await second.exec("ls /logs/agent")).stdout == "two.txt\n"
    assert first.root != second.root


async def test_python3_falls_back_to_the_harness_interpreter(make_env, monkeypatch):
    monkeypatch.setattr(root_layout, "system_python_ok", lambda: False)
    env = make_env()
    await env.start(force_build=False)
    result = await env.exec("command -v python3 && python3 -c 'import sys; print(sys.prefix)'")
    assert result.stdout == f"{root_layout.FALLBACK_BIN}/python3\n{sys.base_prefix}\n"


async def test_extra_read_only_paths_are_visible(make_env, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "model.txt").write_text("weights")
    env = make_env(ro_paths=str(shared))
    await env.start(force_build=False)
    result = await env.exec(f"cat {shared}/model.txt && touch {shared}/new")
    assert result.stdout == "weights" and "Read-only" in (result.stderr or "")


def test_bad_options_are_named(make_env):
    with pytest.raises(ValueError, match="--ek ro_paths: .*relative/dir"):
        make_env(ro_paths="relative/dir")


@pytest.mark.skipif(not IS_ROOT, reason="switching users needs root")
async def test_user_argument_switches_user_when_root(make_env):
    env = make_env()
    await env.start(force_build=False)
    # Any user but root is the trial's own unprivileged uid (the image's accounts are not here).
    for user in ("nobody", None, 1000):
        result = await env.exec("id -u; id -G", user=user)
        assert result.stdout == f"{env.agent_uid}\n{env.agent_uid}\n", user
    assert (await env.exec("id -u", user="root")).stdout == "0\n"
    assert (await env.exec("echo $HOME", user=0)).stdout == "/root\n"


async def test_unprivileged_user_namespace_recipe_works(make_env, monkeypatch, caplog):
    """The recipe used without root: a user namespace mapping us to root."""
    tools = probe_host_tools(as_root=False)  # fails clearly where userns is disabled
    assert tools.userns
    monkeypatch.setattr(local, "cached_host_tools", lambda: tools)
    env = make_env()
    await env.start(force_build=False)
    result = await env.exec("id -u && ./hello && touch /usr/x")
    assert result.stdout == "0\nhello []\n" and "Read-only" in (result.stderr or "")
    # No root to switch users with: it runs as the namespace's root and says so.
    with caplog.at_level(logging.WARNING):
        assert (await env.exec("id -u", user="nobody")).stdout == "0\n"
    assert "runs user 'nobody'" in caplog.text


async def test_start_says_what_is_missing_when_namespaces_are_unavailable(
    make_env, monkeypatch, tmp_path
):
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    fake_unshare = fake_bin / "unshare"
    fake_unshare.write_text(
        "#!/bin/sh\necho 'unshare: unshare failed: Operation not permitted' >&2\nexit 1\n"
    )
    fake_unshare.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake_bin}:{os.environ['PATH']}")
    monkeypatch.setattr(local, "cached_host_tools", lambda: probe_host_tools(as_root=False))
    env = make_env()
    with pytest.raises(NamespaceUnavailableError) as raised:
        await env.start(force_build=False)
    message = str(raised.value)
    assert "Operation not permitted" in message
    assert "--user --map-root-user --mount" in message
    assert "unprivileged user namespaces" in message and "--env docker" in message


HARNESS_DIES = """
import asyncio, sys
from pathlib import Path
from harbor.models.task.config import EnvironmentConfig
from harbor.models.trial.paths import TrialPaths
from environments.local import LocalEnvironment

async def main(base):
    (base / "env").mkdir()
    paths = TrialPaths(base / "trial")
    paths.mkdir()
    env = LocalEnvironment(environment_dir=base / "env", environment_name="t",
                           session_id="t__env", trial_paths=paths,
                           task_env_config=EnvironmentConfig(), state_dir=str(base / "roots"))
    await env.start(force_build=False)
    print(env.root, flush=True)
    sys.stdin.read()  # the test kills this process here, before any stop()

asyncio.run(main(Path(sys.argv[1])))
"""


def test_a_killed_harness_leaves_no_namespace_holder(tmp_path):
    harness = subprocess.Popen(
        [sys.executable, "-c", HARNESS_DIES, str(tmp_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        state_dir = Path(harness.stdout.readline().strip()).parent
        holders = holder_pids(state_dir)
        assert len(holders) == 1
    finally:
        harness.kill()
        harness.wait()
    assert process_gone(holders[0])


async def test_a_later_start_removes_the_folder_a_killed_harness_left(make_env, tmp_path):
    harness = subprocess.Popen(
        [sys.executable, "-c", HARNESS_DIES, str(tmp_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        left = Path(harness.stdout.readline().strip()).parent
    finally:
        harness.kill()
        harness.wait()
    assert (left / "root" / "app").is_dir()
    kept = make_env("kept", keep=True)
    await kept.start(force_build=False)
    await kept.stop(delete=True)
    env = make_env("later")  # the same folder for roots as the killed harness's
    await env.start(force_build=False)
    assert not left.exists()
    assert (kept.root / "app").is_dir()  # kept on purpose: never taken for a leftover


async def test_exec_says_so_when_the_namespace_holder_died(make_env):
    env = make_env()
    await env.start(force_build=False)
    (holder,) = holder_pids(env.root.parent)
    os.kill(holder, signal.SIGKILL)
    assert process_gone(holder)
    await asyncio.sleep(0.1)
    with pytest.raises(RuntimeError, match="namespace is gone"):
        await env.exec("true")


async def test_auto_mounting_and_user_mounts_bind_host_folders(make_env, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "rows.txt").write_text("r1\n")
    mounts = [{"type": "bind", "source": str(data), "target": "/data", "read_only": True}]
    env = make_env(auto_mounting=True, mounts=mounts)
    await env.start(force_build=False)
    result = await env.exec("echo live > /logs/agent/now.txt; cat /data/rows.txt; touch /data/x")
    assert result.stdout == "r1\n" and "Read-only" in (result.stderr or "")
    # written straight into the trial folder on the host; Harbor then skips the copy
    assert (env.trial_paths.agent_dir / "now.txt").read_text() == "live\n"
    assert env.is_path_mounted("/logs/agent", env.trial_paths.agent_dir)


CONNECT = ("python3 -c 'import socket; s = socket.create_connection((\"127.0.0.1\", {port}), 2); "
           "print(s.recv(9).decode())'")


@pytest.mark.skipif(not IS_ROOT, reason="the agent's own uid and namespace need root")
@pytest.mark.parametrize("network", ["private", "host"])
async def test_the_agent_reaches_its_own_loopback_alone(make_env, network):
    import socket

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.settimeout(5)

    def serve_one() -> None:
        try:
            conn, _ = listener.accept()
            conn.sendall(b"host-side")
            conn.close()
        except OSError:
            pass

    env = make_env(network=network)
    await env.start(force_build=False)
    try:
        served = asyncio.create_task(asyncio.to_thread(serve_one))
        agent = await env.exec(CONNECT.format(port=port), timeout_sec=10)
        if network == "private":
            assert agent.return_code != 0 and "host-side" not in (agent.stdout or "")
            # its own loopback works; the harness's root steps keep the host's network
            own = await env.exec("python3 -c 'import socket; s = socket.create_server("
                                 "(\"127.0.0.1\", 0)); print(s.getsockname()[0])'")
            assert own.stdout == "127.0.0.1\n"
            root = await env.exec(CONNECT.format(port=port), user="root", timeout_sec=10)
            assert root.stdout == "host-side\n"
        else:
            assert agent.stdout == "host-side\n"
        await served
    finally:
        listener.close()


@pytest.mark.skipif(not IS_ROOT, reason="the agent's own uid needs root")
async def test_a_copy_of_the_logs_ends_the_agent_in_namespaces_of_its_own(make_env, tmp_path):
    env = make_env()
    await env.start(force_build=False)
    await env.exec("nohup setsid unshare --user --map-root-user --pid --fork "
                   "sleep 300 >/dev/null 2>&1 & sleep 0.3")
    assert any(env.agent_uid in _uids(pid) for pid in _all_pids())
    await env.download_dir("/logs/agent", tmp_path / "agent")
    assert not any(env.agent_uid in _uids(pid) for pid in _all_pids())
    note = local.LocalEnvNote.model_validate_json(
        (env.trial_paths.trial_dir / local.NOTE_FILE).read_text())
    assert note.agent_processes_ended >= 1


async def test_without_root_the_agent_phase_end_reaches_namespaces_of_its_own(
        make_env, monkeypatch, tmp_path):
    tools = probe_host_tools(as_root=False)
    monkeypatch.setattr(local, "cached_host_tools", lambda: tools)
    env = make_env()
    await env.start(force_build=False)
    marker = "301.25"  # a sleep nobody else runs
    await env.exec(f"nohup setsid unshare --user --map-root-user --pid --fork sleep {marker} "
                   ">/dev/null 2>&1 & sleep 0.3")
    assert _running("sleep", marker)
    await env.download_dir("/logs/agent", tmp_path / "agent")
    assert not _running("sleep", marker)


def _running(*argv: str) -> bool:
    wanted = "\0".join(argv).encode() + b"\0"
    for pid in _all_pids():
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes() == wanted:
                return True
        except OSError:
            continue
    return False


def _all_pids() -> list[int]:
    """Live processes (a killed one may stay a zombie until its parent reaps it)."""
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and not _zombie(int(p))]


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX"
    except (OSError, IndexError):
        return True


def _uids(pid: int) -> list[int]:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Uid:"):
                return [int(u) for u in line.split()[1:]]
    except OSError:
        pass
    return []
