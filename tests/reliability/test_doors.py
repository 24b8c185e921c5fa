"""Bad input at every door: each way in (dataset, labels file, a hand-edited task, CLI options,
server URL) refuses bad input with one line that names the culprit, and writes nothing."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from bankbench.sweep.preflight import DEFAULT_TIMEOUT_S
from contracts.reward import REWARD_KEYS
from tests.support.built_tasks import copy_tasks
from tests.support.cli import assert_one_line_error, bankbench, bankbench_here, closed_port
from tests.support.taskdata import sample_rows, write_hub_layout
from tests.support.threaded_http import serve_in_thread


@pytest.fixture(scope="module")
def one_task(sample_tasks_all: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_tasks(sample_tasks_all, tmp_path_factory.mktemp("tasks"),
                      ["banking-003"]) / "banking-003"


def _copy(task: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(task, tmp_path / task.name))


# --- the dataset ---------------------------------------------------------------------------


def test_malformed_dataset_row_is_named_by_its_id(tmp_path):
    rows = sample_rows()
    rows["adaptive_tool_use"][7]["user_goals"] = ["only one goal"]
    rows["tools"][3]["properties"] = "{not json"
    source = write_hub_layout(tmp_path / "dataset", rows)
    out = tmp_path / "out"
    done = bankbench("tasks", "build", "--source", str(source), "--out", str(out))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    header, *bad = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert str(source) in header and "nothing written" in header and "--on-bad-row" in header
    # one line per bad row, each starting with the row's id
    assert sorted(ln.strip().split(":")[0] for ln in bad) == [
        "banking-007", "tools row 3 (send_international_wire)"]
    assert not out.exists()


# --- the labels file -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "culprits"),
    [
        ({"banking-000": ["get_account_balance", "wire_to_moon"]}, ["unknown tools wire_to_moon"]),
        ({"banking-000": [], "banking-042": [], "telecom-001": []},
         ["unknown scenario ids", "banking-042", "telecom-001"]),
    ],
)
def test_labels_file_naming_unknown_things(tmp_path, labels, culprits):
    path = tmp_path / "labels.json"
    path.write_text(json.dumps(labels))
    out = tmp_path / "out"
    done = bankbench("tasks", "build", "--source", "sample", "--limit", "1", "--out", str(out),
                     "--labels", f"file:{path}")
    assert_one_line_error(done, f"--labels file:{path}", *culprits)
    assert not out.exists()


# --- a task directory edited by hand -------------------------------------------------------


def test_bank_without_tools_json_says_which_file(one_task, tmp_path):
    task = _copy(one_task, tmp_path)
    (task / "environment" / "tools.json").unlink()
    bank = task / "environment" / "bank"
    env = {**os.environ, "BANK_INTENTS": str(tmp_path / "intents.jsonl")}
    for args in (["tools"], ["call", "get_account_balance", "{}"]):
        done = subprocess.run([sys.executable, str(bank), *args], capture_output=True,
                              text=True, env=env, timeout=30)
        assert_one_line_error(done, str(task / "environment" / "tools.json"))


def test_corrupt_expected_json_scores_zero_with_the_reason(one_task, tmp_path):
    task = _copy(one_task, tmp_path)
    expected = task / "tests" / "expected.json"
    expected.write_text(expected.read_text()[:40])  # cut short by a bad edit
    intents = tmp_path / "intents.jsonl"
    intents.write_text(json.dumps({"seq": 1, "attempt": 1, "tool": "get_exchange_rate",
                                   "arguments": {}, "valid": True, "errors": [], "ts": 1}) + "\n")
    out = tmp_path / "verifier"
    done = subprocess.run(
        [sys.executable, str(task / "tests" / "verify.py"), "--expected", str(expected),
         "--intents", str(intents), "--out-dir", str(out)],
        capture_output=True, text=True, timeout=30,
    )
    assert done.returncode == 0, done.stderr  # the verifier never crashes
    reward = json.loads((out / "reward.json").read_text())
    assert set(reward) == set(REWARD_KEYS)
    assert all(v == 0.0 for v in reward.values())
    reason = json.loads((out / "tsq.json").read_text())["reason"]
    assert str(expected) in reason and "not valid JSON" in reason


# --- command-line values -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "culprits"),
    [
        (["sweep", "--levels", "x", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"],
         ["--levels", "'x'"]),
        (["sweep", "--levels", "0,2", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"],
         ["--levels", "positive"]),
        (["sweep", "--attempts", "0", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"],
         ["--attempts 0"]),
        (["sweep", "--levels", "1", "--base-url", "http://127.0.0.1:9/v1"], ["--model"]),
        (["sweep", "--levels", "1", "--ak", "self_eval"], ["--ak", "'self_eval'"]),
        (["tasks", "build", "--labels", "nope", "--source", "sample"], ["--labels 'nope'"]),
        (["tasks", "build", "--source", "nowhere/at/all"], ["nowhere/at/all"]),
        (["serve", "up", "--profile", "nope"], ["profile 'nope'"]),
        (["sweep", "--levels", "1,,2", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"],
         ["--levels", "'1,,2'", "empty level"]),
        # an unknown option: the command's own usage and the option meant
        (["sweep", "--levles", "1,2", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"],
         ["bankbench sweep: error", "--levles", "did you mean --levels?"]),
        (["capacity", "--max-minuts", "5"], ["bankbench capacity: error",
                                             "did you mean --max-minutes?"]),
        # a misspelt profile or profile option: refused before any task is built
        (["sweep", "--levels", "1", "--profile", "cpu-mokcer", "--source", "sample"],
         ["'cpu-mokcer'", "did you mean cpu-mocker?"]),
        (["sweep", "--levels", "1", "--profile", "cpu-mocker", "--set", "speedup=2",
          "--source", "sample"], ["'speedup'", "did you mean speedup_ratio?"]),
    ],
)
def test_bad_cli_values_are_named(tmp_path, args, culprits):
    if args[0] == "sweep":
        args = [*args, "--out", str(tmp_path)]
    if args[:2] == ["tasks", "build"]:
        args = [*args, "--out", str(tmp_path / "out")]
    # In this process: every value is refused before any work; the one-line error of a
    # process (no traceback) is shown at each command's other doors below and in its tests.
    done = bankbench_here(*args, cwd=tmp_path)
    if args[0] == "serve":
        # `serve up` announces "starting <profile> …" before it checks the name (reported).
        done.stderr = "\n".join(ln for ln in done.stderr.splitlines()
                                if not ln.startswith("bankbench: starting "))
    assert_one_line_error(done, *culprits)
    assert list(tmp_path.iterdir()) == [], "a refused command wrote files"


# --- the server URL ------------------------------------------------------------------------


def test_check_names_an_unreachable_url():
    url = f"http://127.0.0.1:{closed_port()}/v1"
    done = bankbench("check", "--base-url", url, "--model", "m", timeout=60)
    assert done.returncode == 1
    fails = [ln for ln in done.stdout.splitlines() if ln.startswith("[FAIL]")]
    assert fails and f"{url}/models" in fails[0]
    assert "cannot run" in done.stdout


def _sweep_at(url: str, tmp_path: Path) -> subprocess.CompletedProcess:
    # The timeout only keeps a hung CLI from hanging the suite: on a loaded host the CLI's
    # imports alone can take a minute, so the checks below are on what it did, not how fast.
    return bankbench("sweep", "--levels", "1", "--base-url", url, "--model", "m",
                     "--source", "sample", "--out", str(tmp_path), "--name", "s", timeout=300)


def test_sweep_at_a_closed_port_fails_before_any_trial(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    done = _sweep_at(url, tmp_path)
    line = assert_one_line_error(done, f"{url}/models", "no trial was run")
    assert done.returncode == 1 and "cannot reach" in line
    assert done.stdout == ""  # no progress line: no task was built, no level started
    assert list(tmp_path.iterdir()) == []  # nothing built, no Harbor job, no sweep folder


class _NotAnAPI(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # a web server, but not an OpenAI API root
        self.send_response(404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_sweep_at_a_wrong_path_says_so(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NotAnAPI)
    serve_in_thread(server)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/api"
        done = _sweep_at(url, tmp_path)
    finally:
        server.shutdown()
        server.server_close()
    assert_one_line_error(done, f"{url}/models", "HTTP 404", "/v1")
    assert not (tmp_path / "s").exists()


def test_sweep_at_a_silent_server_gives_up_after_one_bounded_request(tmp_path):
    # Listens (connections complete in the backlog) but never answers.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        done = _sweep_at(url, tmp_path)
        silent.setblocking(False)
        connections = 0
        while True:  # every connection the CLI opened is still in the backlog
            try:
                silent.accept()[0].close()
            except BlockingIOError:
                break
            connections += 1
    line = assert_one_line_error(done, f"{url}/models", "did not answer within")
    assert f"within {DEFAULT_TIMEOUT_S:g} s" in line  # the one wait is bounded, and says by what
    assert connections == 1  # one request, not retried: the wait is that bound, once
    assert list(tmp_path.iterdir()) == []


def test_check_without_v1_asks_for_the_api_root():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NotAnAPI)
    serve_in_thread(server)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        done = bankbench("check", "--base-url", url, "--model", "m", timeout=60)
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 1 and "Traceback" not in done.stderr
    fails = [ln for ln in done.stdout.splitlines() if ln.startswith("[FAIL]")]
    assert len(fails) == 1 and "HTTP 404" in fails[0]
    assert "OpenAI API root" in fails[0] and "does not end in /v1" in fails[0]


# --- help ----------------------------------------------------------------------------------


def _help(*command: str) -> str:
    done = bankbench_here(*command, "--help")
    assert done.returncode == 0, done.stderr
    return " ".join(done.stdout.split())  # argparse wraps lines


def test_help_says_every_default_and_what_repeats_are():
    check = _help("check")
    assert "(default: 60.0)" in check and "(default: 64)" in check
    capacity = _help("capacity")
    assert "No new level starts after this many minutes of the search (default: no limit)" \
        in capacity
    # --attempts and --repeats, told apart where both appear
    assert "max(--attempts, --repeats)" in capacity and "--attempts only raises it" in capacity
    for action in ("up", "status", "logs", "down", "metrics", "doctor"):
        done = bankbench_here("serve", action, "--help")
        # usage, then the description paragraph, then the options
        blocks = [b for b in done.stdout.split("\n\n") if b.strip()]
        assert blocks[0].startswith("usage:") and not blocks[1].startswith("options:"), \
            f"`serve {action} --help` has no description"


# --- read-only folders ---------------------------------------------------------------------


def _read_only(folder: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`bankbench ARGS` with `folder` remounted read-only in a private mount namespace (the
    tests run as root, which file modes do not stop); skips where that is not allowed."""
    script = ('mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" || exit 97; '
              'if touch "$1/.w" 2>/dev/null; then exit 98; fi; shift; exec "$@"')
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, "sh", str(folder), sys.executable, "-m",
         "bankbench", *args], capture_output=True, text=True, timeout=300, cwd=cwd,
        env={**os.environ, "HARBOR_TELEMETRY": "0"})
    if done.returncode in (97, 98) or "unshare failed" in done.stderr:
        pytest.skip("cannot make a read-only mount here (needs unshare -m as root)")
    return done


@pytest.fixture
def read_only_sweep(tmp_path: Path) -> Path:
    from analysis.synthetic import synthetic_sweep

    return synthetic_sweep(tmp_path / "share" / "sweep", [1, 2], 2, 2)


def _files(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_size for p in folder.rglob("*")}


def test_a_read_only_sweep_is_reported_without_writing_into_it(read_only_sweep, tmp_path):
    before = _files(read_only_sweep)
    here = tmp_path / "here"
    here.mkdir()
    done = _read_only(read_only_sweep.parent, "report", str(read_only_sweep), "--no-plots",
                      cwd=here)
    assert done.returncode == 0, done.stderr
    said = [ln for ln in done.stderr.splitlines() if "cannot be written" in ln]
    assert len(said) == 1 and str(here / "sweep-report") in said[0]
    assert (here / "sweep-report" / "report.md").is_file()
    assert _files(read_only_sweep) == before


@pytest.mark.parametrize("command", ["sweep-out", "resume", "capacity-out", "report-out"])
def test_a_read_only_folder_is_one_line(read_only_sweep, command):
    share = read_only_sweep.parent
    args = {
        "sweep-out": ["sweep", "--profile", "cpu-mocker", "--out", str(share / "new")],
        "resume": ["sweep", "--resume", str(read_only_sweep)],
        "capacity-out": ["capacity", "--profile", "cpu-mocker", "--out", str(share / "new")],
        "report-out": ["report", str(read_only_sweep), "--out", str(share / "r")],
    }[command]
    done = _read_only(share, *args)
    assert_one_line_error(done, "cannot write there", "Read-only file system")
    assert not (share / "new").exists() and not (share / "r").exists()


# --- progress ------------------------------------------------------------------------------


def test_the_eta_does_not_climb_while_nothing_finishes(tmp_path):
    from analysis.synthetic import write_job, write_trial
    from bankbench.sweep import progress

    job = write_job(tmp_path / "c2", n_concurrent=2, n_total_trials=4, finished=False)
    write_trial(job, "banking-000__a", scenario_id="banking-000", rewards={"tsq": 1.0})
    write_trial(job, "banking-001__b", scenario_id="banking-001", running=True)
    result = job / "banking-000__a" / "result.json"
    now = time.time()
    os.utime(result, (now - 50, now - 50))  # finished 10 s into the level, 50 s ago
    started = time.monotonic() - 60
    text = progress.line(2, job, total=4, started=started)
    assert "ETA overdue (no trial finished for 50 s)" in text, text


# --- the agent server's counts -------------------------------------------------------------


def test_agent_server_health_counts_running_episodes_apart_from_totals(tmp_path, monkeypatch):
    import asyncio

    import httpx

    from agents.options import parse_options
    from bankbench.agent_server import app as server_app
    from bankbench.agent_server.models import ServerConfig

    gate = asyncio.Event()

    async def episode(*_args, **_kwargs):
        await gate.wait()
        raise RuntimeError("stopped here")  # answered 500; the episode still ends

    monkeypatch.setattr(server_app, "run_episode", episode)
    monkeypatch.setattr(server_app, "task_dir", lambda *_a: None)
    app = server_app.create_app(ServerConfig(tasks_dir=tmp_path, out_dir=tmp_path,
                                             agent=parse_options({}), model="m"))

    async def scenario() -> list[dict]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://a") as client:
            call = asyncio.create_task(client.post("/invoke", json={"scenario": "banking-000"}))
            while not app.state.tasks:
                await asyncio.sleep(0.01)
            during = (await client.get("/health")).json()
            gate.set()
            await call
            after = (await client.get("/health")).json()
        return [during, after]

    during, after = asyncio.run(scenario())
    assert (during["running"], during["episodes_started"], during["episodes_finished"]) == \
        (1, 1, 0)
    assert (after["running"], after["episodes_started"], after["episodes_finished"]) == (0, 1, 1)
    assert "episodes" not in after  # the old name that read as a total


# --- two sweeps on one server, and a level above the trials there are ----------------------


class _ModelsOnly(BaseHTTPRequestHandler):
    """Lists model `m`; a chat request is held open, so the sweep's trials keep running."""

    def do_GET(self) -> None:
        body = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def do_POST(self) -> None:
        time.sleep(120)

    def log_message(self, *args: object) -> None:
        pass


def _start_sweep(url: str, tasks: Path, out: Path, name: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "bankbench", "sweep", "--levels", "4", "--base-url", url,
         "--model", "m", "--tasks", str(tasks), "--out", str(out), "--name", name],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"})


def _read_until(proc: subprocess.Popen, marker: str, timeout_s: float = 240) -> list[str]:
    seen: list[str] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line.rstrip())
        if marker in line:
            return seen
    raise AssertionError(f"{marker!r} never came: {seen}")


@pytest.mark.harbor
def test_a_second_sweep_on_the_same_server_is_warned(sample_tasks_all, tmp_path):
    tasks = copy_tasks(sample_tasks_all, tmp_path / "tasks", ["banking-000"])
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ModelsOnly)
    server.daemon_threads = True
    serve_in_thread(server)
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    first = second = None
    try:
        first = _start_sweep(url, tasks, tmp_path, "a")
        seen = _read_until(first, "level 4: running")
        # one task x one attempt cannot keep four agents busy: said before the level runs
        assert any(ln.startswith("note: levels [4] exceed the 1 trials per level")
                   for ln in seen), seen
        second = _start_sweep(url, tasks, tmp_path, "b")
        warned = [ln for ln in _read_until(second, "WARNING") if "WARNING" in ln]
        assert str((tmp_path / "a").resolve()) in warned[0] and url in warned[0]
        assert "each measures the other's load" in warned[0]
    finally:
        for proc in (second, first):
            if proc is not None and proc.poll() is None:
                proc.send_signal(2)  # Ctrl-C: the sweep stops cleanly
        for proc in (second, first):
            if proc is not None:
                proc.wait(timeout=120)
        server.shutdown()
        server.server_close()
