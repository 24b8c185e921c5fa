"""What an agent's commands, output, text and files can reach in LocalEnvironment: verification
begins only on Harbor's exact step, output is bounded and held by nothing, files Harbor parses
on the host arrive only parseable, and names that are not UTF-8 are recorded, escaped."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

import pytest
from harbor.models.trial.paths import EnvironmentPaths
from localenv_helpers import IS_ROOT, gone_within, process_gone

from environments.execution import Lingering, run_command
from environments.local import verifier_first_step
from environments.options import NOTE_FILE
from environments.transfer import REJECTED_SUFFIX, escape_name

pytestmark = pytest.mark.timeout(120)
MIB = 1 << 20


async def test_output_past_the_bound_is_counted_dropped_and_said():
    done = await run_command(["bash", "-c", "head -c 3145728 /dev/zero; echo err >&2"],
                             dict(os.environ), None, max_output_bytes=MIB)
    assert done.code == 0 and len(done.stdout) == MIB
    assert done.stderr.startswith("err\n")
    assert f"stdout was {3 * MIB} bytes; kept the first {MIB}" in done.stderr


async def test_a_background_writer_neither_holds_the_command_nor_outlives_its_pipe(tmp_path):
    pid_file = tmp_path / "writer.pid"
    started = time.monotonic()
    done = await run_command(
        ["bash", "-c", f"(while :; do echo x; sleep 0.01; done) & echo $! > {pid_file}; "
                       "echo done"], dict(os.environ), None, max_output_bytes=MIB)
    assert done.code == 0 and "done" in done.stdout
    assert time.monotonic() - started < 5
    writer = int(pid_file.read_text())
    # Its next write after the command ended meets a closed pipe: SIGPIPE ends it.
    assert await asyncio.to_thread(process_gone, writer, 5.0)


async def test_a_root_service_keeps_writing_to_its_output_until_the_trial_stops(tmp_path):
    pid_file = tmp_path / "service.pid"
    lingering = Lingering()
    done = await run_command(
        ["bash", "-c", f"(while :; do echo tick; sleep 0.01; done) & echo $! > {pid_file}"],
        dict(os.environ), None, max_output_bytes=MIB, linger=lingering)
    assert done.code == 0
    service = int(pid_file.read_text())
    await asyncio.sleep(0.3)
    assert not await asyncio.to_thread(process_gone, service, 0.1)  # still writing, still drained
    lingering.close()
    assert await asyncio.to_thread(process_gone, service, 5.0)


async def test_only_harbors_own_first_step_begins_verification(make_env):
    env = make_env()
    await env.start(force_build=False)
    step = verifier_first_step(EnvironmentPaths.for_os(env.os), env.os)
    assert step == "rm -f -- /logs/verifier/reward.txt /logs/verifier/reward.json"
    await env.exec("sleep 300 >/dev/null 2>&1 &")
    running = env.processes()
    assert running
    # Root commands that merely hold the step's text (a model's words on a command line).
    for text in (f"echo {step!r}", f"{step}; true", f"echo '/logs/verifier/reward.' && {step}"):
        result = await env.exec(text, user="root")
        assert result.return_code == 0
        assert set(running) <= set(env.processes()), text
    await env.exec(step, user="root")
    assert gone_within(env.processes)


async def test_a_file_harbor_parses_arrives_only_when_harbor_can_parse_it(make_env, tmp_path):
    env = make_env()
    await env.start(force_build=False)
    await env.exec(r"printf '\xff\xfe{' > /logs/agent/trajectory.json; mkdir -p /logs/agent/s; "
                   "echo '{\"steps\": []}' > /logs/agent/s/trajectory.json")
    out = tmp_path / "agent"
    await env.download_dir("/logs/agent", out)
    assert not (out / "trajectory.json").exists()
    assert (out / f"trajectory.json{REJECTED_SUFFIX}").read_bytes() == b"\xff\xfe{"
    assert json.loads((out / "s" / "trajectory.json").read_text()) == {"steps": []}
    assert not [p for p in out.rglob("*") if "localenv-check" in p.name]
    note = json.loads((Path(env.trial_paths.trial_dir) / NOTE_FILE).read_text())
    [rejected] = note["files_rejected"]
    assert rejected["path"] == "/logs/agent/trajectory.json" and "not UTF-8" in rejected["why"]


@pytest.mark.skipif(not IS_ROOT, reason="links of the agent's own user need root")
async def test_names_that_are_not_utf8_are_recorded_escaped(make_env, tmp_path):
    env = make_env()
    await env.start(force_build=False)
    await env.exec("ln -s / /logs/agent/$'\\xff'link && mkfifo /logs/agent/$'\\xfe'fifo")
    await env.download_dir("/logs/agent", tmp_path / "agent")
    note = json.loads((Path(env.trial_paths.trial_dir) / NOTE_FILE).read_text())
    paths = {e["path"]: e["why"] for r in note["logs_left_out"] for e in r["examples"]}
    assert paths == {"/logs/agent/\\xfefifo": "special file", "/logs/agent/\\xfflink": "link"}


def test_escape_name_keeps_utf8_and_escapes_the_rest():
    assert escape_name("plain é") == "plain é"
    assert escape_name(os.fsdecode(b"a\xffb")) == "a\\xffb"
    assert escape_name("lone \ud800") == "lone \\ud800"
    json.dumps(escape_name(os.fsdecode(b"\xfe\xff")))  # always serialises
    assert sys.getfilesystemencoding() == "utf-8"
