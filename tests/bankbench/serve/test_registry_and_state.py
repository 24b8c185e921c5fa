"""The profile registry, the import direction inside serve/, where serve state is recorded, and
how `serve down`/`status` treat a recorded stack whose processes are gone."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bankbench.procs import group_alive, start, start_time
from bankbench.serve.state import Component, ServerState, known_state_dirs, save_state

SERVE = Path(__file__).resolve().parents[3] / "bankbench" / "serve"


def _serve_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "bankbench.serve":
                found |= {a.name for a in node.names}
            elif node.module.startswith("bankbench.serve."):
                found.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[2] for a in node.names
                      if a.name.startswith("bankbench.serve.")}
    return found


def test_serve_modules_import_only_downward():
    graph = {p.stem: _serve_imports(p) - {p.stem} for p in SERVE.glob("*.py")}
    # Nothing imports the entry points: the registry only from api, api from nobody in serve/.
    assert [m for m, deps in graph.items() if "api" in deps] == []
    assert [m for m, deps in graph.items() if "profiles" in deps] == ["api"]
    # No cycles, lazy imports included: repeatedly drop modules that import nothing left.
    left = dict(graph)
    while left:
        leaves = [m for m, deps in left.items() if not deps & left.keys()]
        assert leaves, f"import cycle among {sorted(left)}"
        for m in leaves:
            del left[m]


def test_every_registered_profile_implements_the_protocol_and_is_in_the_help():
    from bankbench.commands.serve import PROFILE_HELP
    from bankbench.serve.profiles import REGISTRY

    assert set(REGISTRY) == {"cpu-mocker", "cpu-tiny", "gpu-sglang", "gpu-vllm",
                             "gpu-sglang-disagg", "external"}
    for name, prof in REGISTRY.items():
        assert prof.name == name and prof.summary
        for method in ("check", "start", "dry_run", "stop", "alive"):
            assert callable(getattr(prof, method)), (name, method)
        assert name in PROFILE_HELP


def test_serve_state_lives_apart_from_the_build_caches(monkeypatch, tmp_path):
    from bankbench.paths import cache_dir, serve_state_root
    from bankbench.serve.state import default_state_dir

    # The suite's session fixture keeps test stacks out of the user's cache ...
    user_serve = Path.home() / ".cache" / "bankbench" / "serve"
    assert serve_state_root() != user_serve
    assert user_serve not in serve_state_root().parents
    # ... while the Dynamo venv / wheel cache stays where the user's builds are.
    monkeypatch.delenv("BANKBENCH_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert cache_dir() == Path.home() / ".cache" / "bankbench"
    monkeypatch.setenv("BANKBENCH_SERVE_STATE", str(tmp_path / "st"))
    assert default_state_dir("cpu-mocker") == tmp_path / "st" / "cpu-mocker"
    monkeypatch.delenv("BANKBENCH_SERVE_STATE")
    assert serve_state_root() == cache_dir() / "serve"


def _record(state_dir: Path, pid: int, started: float | None) -> ServerState:
    state = ServerState(
        profile="cpu-mocker", base_url="http://127.0.0.1:9/v1", model="m",
        state_dir=state_dir,
        components=[Component(name="frontend", kind="process", pid=pid, start_time=started,
                              log_path=state_dir / "logs" / "frontend.log")])
    (state_dir / "logs").mkdir(parents=True)
    (state_dir / "logs" / "frontend.log").write_text("it crashed\n")
    save_state(state)
    return state


def _dead_pid() -> tuple[int, float | None]:
    proc = subprocess.Popen(["true"], start_new_session=True)
    started = start_time(proc.pid)
    proc.wait()
    return proc.pid, started


def _cli(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bankbench", "serve", *args],
                          capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture
def serve_env(tmp_path, monkeypatch):
    root = tmp_path / "serve"
    monkeypatch.setenv("BANKBENCH_SERVE_STATE", str(root))
    return dict(os.environ, BANKBENCH_SERVE_STATE=str(root))


def test_plain_down_stops_the_live_stack_and_forgets_a_dead_one(serve_env, tmp_path):
    dead = _record(tmp_path / "dead", *_dead_pid())
    pid = start(["sleep", "300"], dict(os.environ), tmp_path / "live" / "logs" / "frontend.log")
    live = _record(tmp_path / "live-state", pid, start_time(pid))
    assert len(known_state_dirs()) == 2
    down = _cli("down", env=serve_env)
    assert down.returncode == 0, down.stderr
    assert f"forgot the cpu-mocker stack recorded in {dead.state_dir}" in down.stderr
    assert "processes are gone" in down.stderr
    deadline = time.monotonic() + 10
    while group_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not group_alive(pid)
    assert known_state_dirs() == []
    assert (dead.state_dir / "logs" / "frontend.log").exists()  # the record goes, logs stay
    assert not (live.state_dir / "state.json").exists()


def test_status_treats_a_dead_stack_as_gone_but_logs_can_still_read_it(serve_env, tmp_path):
    dead = _record(tmp_path / "dead", *_dead_pid())
    logs = _cli("logs", env=serve_env)  # logs keeps a dead stack: it is why one reads them
    assert logs.returncode == 0 and "it crashed" in logs.stdout
    st = _cli("status", env=serve_env)
    assert st.returncode == 1
    assert "processes are gone" in st.stderr and "no running stack recorded" in st.stderr
    assert not (dead.state_dir / "state.json").exists()
    again = _cli("down", env=serve_env)
    assert again.returncode == 1 and "no running stack recorded" in again.stderr
    assert "forgot" not in again.stderr  # pruned once, not reported again


def test_a_recycled_pid_does_not_keep_a_dead_stack_alive(serve_env, tmp_path):
    # The pid now belongs to a process that started later than the recorded one.
    _record(tmp_path / "dead", os.getpid(), (start_time(os.getpid()) or 0) - 1)
    from bankbench.serve.api import recorded_stacks

    live, gone = recorded_stacks(prune=False)
    assert live == [] and [s.state_dir for s in gone] == [tmp_path / "dead"]
