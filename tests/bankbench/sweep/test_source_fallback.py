"""`--source auto` with the hub out of reach: the bundled sample runs, and nobody can miss it;
and that profile sweep, resumed on another port, skips its complete level and says it again.

The hub is made unreachable the way a user meets it offline (`HF_HUB_OFFLINE=1`, nothing
cached); the task build, the sweep, Dynamo's frontend (mocker engine) and Harbor are real.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from contracts.host_load import HOST_LOAD_FILE, HostLoad
from tests.support.built_tasks import CHEAP_LABELS
from tests.support.cli import assert_one_line_error, bankbench, bankbench_here, closed_port

HARBOR_ENV = {"HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
WARNING = "WARNING: --source auto could not reach the Hugging Face hub"


def _offline(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, **HARBOR_ENV, "HF_HUB_OFFLINE": "1",
            "HF_HOME": str(tmp_path / "hf-home")}


def test_prepare_tasks_falls_back_loudly(tmp_path):
    code = (
        "from pathlib import Path\n"
        "from contracts.sweep import SweepConfig\n"
        "from bankbench.sweep.tasks import prepare_tasks\n"
        # Labels are not what this is about: the sample's gold, not the sentence encoder.
        f"c = SweepConfig(levels=[1], profile='cpu-mocker', limit=2, labels={CHEAP_LABELS!r})\n"
        f"p = prepare_tasks(c, Path({str(tmp_path / 'sweep')!r}))\n"
        "print('RESULT', p.n_tasks, p.dataset, '|', p.fallback)\n")
    env = {**_offline(tmp_path), "BANKBENCH_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert WARNING in done.stdout
    result = next(line for line in done.stdout.splitlines() if line.startswith("RESULT"))
    assert result.startswith("RESULT 2 sample@sample-1 | DatasetError")


@pytest.fixture(scope="module")
def offline_sweep(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """One profile sweep run offline, as a user starts it; the first test reads it, the second
    resumes it on another port."""
    out = tmp_path_factory.mktemp("offline")
    cmd = [sys.executable, "-m", "bankbench", "sweep", "--profile", "cpu-mocker",
           "--set", "speedup_ratio=10", "--levels", "1", "--limit", "2", "--source", "auto",
           "--out", str(out), "--name", "s", "--no-plots"]
    done = subprocess.run(cmd, env=_offline(out), capture_output=True, text=True, timeout=540)
    return out, done


@pytest.mark.dynamo
@pytest.mark.harbor
@pytest.mark.timeout(600)
def test_sweep_warns_at_start_and_end_and_records_the_fallback(offline_sweep):
    tmp_path, done = offline_sweep
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    first, last = out.index(WARNING), out.rindex(WARNING)
    assert first < out.index("starting server profile") < out.index("stopping the server") < last
    # after the table: the dataset warning, then any other (a saturated host's) and the report path
    table_end = done.stdout.rstrip().splitlines()[-6:]
    assert any(line.startswith("WARNING: dataset = bundled sample (hub unreachable)")
               for line in table_end)
    manifest = json.loads((tmp_path / "s" / "sweep.json").read_text())
    assert manifest["dataset"] == "sample@sample-1"
    assert manifest["dataset_fallback"].startswith("DatasetError")
    header = (tmp_path / "s" / "report.md").read_text().split("## Provenance")[0]
    assert "| bundled sample (hub unreachable) | sample-1 |" in header


@pytest.mark.dynamo
@pytest.mark.harbor
@pytest.mark.timeout(600)
def test_a_profile_sweep_resumes_on_another_port(offline_sweep):
    tmp_path, first = offline_sweep
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    sweep = tmp_path / "s"
    # The level's host load: the sweep started the stack, so the server's CPU share is known.
    load = HostLoad.model_validate_json((sweep / "c1" / HOST_LOAD_FILE).read_text())
    assert load.seconds > 0 and load.samples >= 1 and load.server_cpu is not None
    assert load.client_cpu > 0 and load.server_cpu > 0
    old = json.loads((sweep / "sweep.json").read_text())["base_url"]
    port = closed_port()
    again = bankbench("sweep", "--resume", str(sweep), "--port", str(port), "--no-plots",
                      timeout=600,
                      env=_offline(tmp_path))
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert "level 1: already complete, skipped" in again.stdout
    assert WARNING in again.stdout  # a resumed sweep says where its tasks came from again
    # a complete level is skipped on resume: nothing ran, nothing is added to its load
    assert HostLoad.model_validate_json((sweep / "c1" / HOST_LOAD_FILE).read_text()) == load
    manifest = json.loads((sweep / "sweep.json").read_text())
    assert manifest["base_url"] == f"http://127.0.0.1:{port}/v1"
    assert manifest["earlier_base_urls"] == [old]
    job = json.loads((sweep / "c1" / "config.json").read_text())
    assert job["agents"][0]["kwargs"]["base_url"] == manifest["base_url"]
    refused = bankbench_here("sweep", "--profile", "cpu-mocker", "--port", "1", "--out",
                             str(tmp_path))
    assert_one_line_error(refused, "--port applies to --resume")
