"""The profile registry, the import direction inside serve/, where serve state is recorded, and
how `serve down`/`status` treat a recorded stack whose processes are gone."""

from __future__ import annotations

import ast
import os
import subprocess
import time
from pathlib import Path

from bankbench.procs import group_alive, start, start_time
from bankbench.serve.state import known_state_dirs
from tests.support.serve_state import record_stack, serve_cli

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


def _dead_pid() -> tuple[int, float | None]:
    proc = subprocess.Popen(["true"], start_new_session=True)
    started = start_time(proc.pid)
    proc.wait()
    return proc.pid, started


def test_plain_down_stops_the_live_stack_and_forgets_a_dead_one(serve_env, tmp_path):
    dead = record_stack(tmp_path / "dead", *_dead_pid())
    pid = start(["sleep", "300"], dict(os.environ), tmp_path / "live" / "logs" / "frontend.log")
    live = record_stack(tmp_path / "live-state", pid, start_time(pid))
    assert len(known_state_dirs()) == 2
    down = serve_cli("down", env=serve_env)
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
    dead = record_stack(tmp_path / "dead", *_dead_pid())
    logs = serve_cli("logs", env=serve_env)  # logs keeps a dead stack: it is why one reads them
    assert logs.returncode == 0 and "it crashed" in logs.stdout
    st = serve_cli("status", env=serve_env)
    assert st.returncode == 1
    assert "processes are gone" in st.stderr and "no running stack recorded" in st.stderr
    assert not (dead.state_dir / "state.json").exists()
    again = serve_cli("down", env=serve_env)
    assert again.returncode == 1 and "no running stack recorded" in again.stderr
    assert "forgot" not in again.stderr  # pruned once, not reported again


def test_a_recycled_pid_does_not_keep_a_dead_stack_alive(serve_env, tmp_path):
    # The pid now belongs to a process that started later than the recorded one.
    record_stack(tmp_path / "dead", os.getpid(), (start_time(os.getpid()) or 0) - 1)
    from bankbench.serve.api import recorded_stacks

    live, gone = recorded_stacks(prune=False)
    assert live == [] and [s.state_dir for s in gone] == [tmp_path / "dead"]
