"""`bankbench tasks build` as users run it: a subprocess, progress on stderr, clear errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tasks.banking.hub import REPO_ID
from tests.support.taskdata import sample_rows, write_hub_layout


def bankbench(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bankbench", "tasks", *args], capture_output=True, text=True,
        env=env,
    )


def test_help_explains_the_options():
    out = bankbench("build", "--help").stdout
    for option in ("--source", "--out", "--mode", "--labels", "--on-bad-row", "--limit",
                   "--scenarios", "--prune-stale"):
        assert option in out
    assert "hf@<revision>" in out
    from tasks.banking.labels import REGISTRY

    flat = "".join(out.split())  # argparse wraps at spaces and hyphens
    for method in REGISTRY.values():  # every method, named and explained, from the registry
        assert "".join(f"'{method.spec}' ({method.summary}".split()) in flat, method.name


def test_build_from_the_sample(tmp_path):
    done = bankbench(
        "build", "--source", "sample", "--out", str(tmp_path), "--scenarios",
        "banking-004,banking-001,banking-010", "--labels", "keyword", "--progress-every", "2",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["scenario_ids"] == ["banking-004", "banking-001", "banking-010"]
    assert summary["labels"] == "keyword@1" and summary["dataset_revision"] == "sample-1"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(summary["scenario_ids"])
    progress = [line for line in done.stderr.splitlines() if line.startswith("[")]
    assert progress == [f"[2/3] tasks written (2 changed) in {tmp_path}",
                        f"[3/3] tasks written (3 changed) in {tmp_path}"]
    assert "3 tasks in" in done.stderr


def test_errors_are_one_line_and_write_nothing(tmp_path):
    labels = tmp_path / "labels.json"
    labels.write_text(json.dumps({"banking-000": ["wire_money"]}))
    out = tmp_path / "out"
    done = bankbench("build", "--source", "sample", "--out", str(out), "--limit", "1",
                     "--labels", f"file:{labels}")
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"bankbench tasks build: --labels file:{labels}: unknown tools wire_money"
    )
    assert not out.exists()


def test_hf_source_reads_the_hub_cache_under_the_bankbench_cache(tmp_path):
    sha = "89abcdef0123456789abcdef0123456789abcdef"
    repo = tmp_path / "cache" / "hf" / ("datasets--" + REPO_ID.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(sha)
    write_hub_layout(repo / "snapshots" / sha, sample_rows())
    env = dict(os.environ, BANKBENCH_CACHE=str(tmp_path / "cache"))
    done = bankbench("build", "--source", "hf", "--offline", "--limit", "1", "--out",
                     str(tmp_path / "out"), "--labels", "intent", "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["dataset_revision"] == sha
