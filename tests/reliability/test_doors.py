"""Bad input at every door: each way in (dataset, labels file, a hand-edited task, CLI options,
server URL) refuses bad input with one line that names the culprit, and writes nothing."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from contracts.reward import REWARD_KEYS
from tests.reliability.helpers import assert_one_line_error, bankbench, closed_port
from tests.support.built_tasks import copy_tasks
from tests.tasks.taskdata import sample_rows, write_hub_layout


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
    ],
)
def test_bad_cli_values_are_named(tmp_path, args, culprits):
    if args[0] == "sweep":
        args = [*args, "--out", str(tmp_path)]
    if args[:2] == ["tasks", "build"]:
        args = [*args, "--out", str(tmp_path / "out")]
    done = bankbench(*args, cwd=tmp_path)
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


def _sweep_at(url: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.monotonic()
    done = bankbench("sweep", "--levels", "1", "--base-url", url, "--model", "m",
                     "--source", "sample", "--out", str(tmp_path), "--name", "s", timeout=60)
    return done, time.monotonic() - t0


def test_sweep_at_a_closed_port_fails_before_any_trial(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    done, took = _sweep_at(url, tmp_path)
    line = assert_one_line_error(done, f"{url}/models", "no trial was run")
    assert done.returncode == 1 and "cannot reach" in line
    assert took < 20
    assert not (tmp_path / "s").exists()  # nothing built, no Harbor job


class _NotAnAPI(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # a web server, but not an OpenAI API root
        self.send_response(404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_sweep_at_a_wrong_path_says_so(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NotAnAPI)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/api"
        done, _ = _sweep_at(url, tmp_path)
    finally:
        server.shutdown()
        server.server_close()
    assert_one_line_error(done, f"{url}/models", "HTTP 404", "/v1")
    assert not (tmp_path / "s").exists()


def test_sweep_at_a_silent_server_times_out_quickly(tmp_path):
    # Listens (connections complete in the backlog) but never answers.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        done, took = _sweep_at(url, tmp_path)
    assert_one_line_error(done, f"{url}/models", "did not answer within")
    assert took < 30
    assert not (tmp_path / "s").exists()
