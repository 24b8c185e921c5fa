"""pass@k, pass^k, provenance and paired compare on jobs the real `harbor run -k 2` wrote:
Harbor's `oracle` (solves every banking task) and `nop` (calls nothing) agents on tasks
built from the bundled sample, through LocalEnvironment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from analysis.compare import MIN_PAIRED_SCENARIOS, TOO_FEW
from analysis.metrics.quality import SOLVED_DERIVED, SOLVED_FROM_REWARD
from analysis.report import write_report
from analysis.summary import summarize
from analysis.tables import load
from tests.support.built_tasks import CHEAP_LABELS

pytestmark = [pytest.mark.harbor, pytest.mark.timeout(900)]

BIN = Path(sys.executable).parent
N_TASKS = 3


def run(*args: str, cwd: Path) -> None:
    env = {**os.environ, "HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([*args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.fixture(scope="module")
def jobs(tmp_path_factory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("repeats")
    tasks = root / "tasks"
    run(str(BIN / "bankbench"), "tasks", "build", "--source", "sample", "--limit", str(N_TASKS),
        "--labels", CHEAP_LABELS, "--out", str(tasks), cwd=root)
    for agent in ("oracle", "nop"):
        run(str(BIN / "harbor"), "run", "--path", str(tasks), "--agent", agent,
            "--env", "environments.local:LocalEnvironment", "--jobs-dir", str(root / "jobs"),
            "--job-name", agent, "-k", "2", "-n", "2", "-q", cwd=root)
    return root / "jobs" / "oracle", root / "jobs" / "nop", tasks


def test_pass_at_k_on_two_repeats(jobs):
    oracle, nop = (summarize(load(job)).iloc[0] for job in jobs[:2])
    for row in (oracle, nop):
        assert row["n_trials"] == 2 * N_TASKS and row["n_counted"] == 2 * N_TASKS
        assert row["k"] == 2 and row["n_scenarios"] == N_TASKS
        assert row["solved_from"] in (SOLVED_DERIVED, SOLVED_FROM_REWARD)
    assert (oracle["pass_at_1"], oracle["pass_at_k"], oracle["pass_hat_k"]) == (1.0, 1.0, 1.0)
    assert (nop["pass_at_1"], nop["pass_at_k"], nop["pass_hat_k"]) == (0.0, 0.0, 0.0)
    assert oracle["tsq_mean"] == 1.0 and nop["tsq_mean"] == 0.0
    # Provenance: what the builder wrote into the tasks the trials ran.
    task = tomllib.loads(next(jobs[2].glob("*/task.toml")).read_text())["metadata"]
    labels = json.loads(next(jobs[2].glob("*/tests/expected.json")).read_text())["labels"]
    assert (oracle["labels"], oracle["mode"]) == (task["labels"], task["mode"])
    assert oracle["dataset_source"] == "bundled sample"
    assert oracle["dataset_revision"] == task["dataset_revision"]
    f1 = (labels.get("quality") or {}).get("heldout_micro_f1")
    if f1 is None:
        assert oracle["label_quality"] == "not measured"
    else:
        assert oracle["label_heldout_f1"] == f1
    # The sample has gold: beside TSQ stands the gold-perfect agent's score on its own gold,
    # over the scenarios the job ran.
    perfect = [json.loads(p.read_text())["gold_perfect"]["tsq"]
               for p in jobs[2].glob("*/tests/expected.json")]
    assert len(perfect) == N_TASKS
    assert oracle["gold_perfect_tsq_mean"] == pytest.approx(sum(perfect) / N_TASKS)
    assert oracle["gold_perfect"].startswith("bundled sample gold")


def test_harbors_own_pass_at_k_is_absent_for_these_rewards(jobs):
    """What the report says: Harbor computes pass@k only for a single 0/1 reward key."""
    result = json.loads((jobs[0] / "result.json").read_text())
    evals = result["stats"].get("evals") or {}
    assert evals and all(not e.get("pass_at_k") for e in evals.values())


def test_report_compares_oracle_and_nop_paired(jobs, tmp_path):
    oracle, nop, _ = jobs
    report = write_report(oracle, out=tmp_path / "r", compare=[nop], draw=False)
    rows = json.loads((report.parent / "summary.json").read_text())["comparison"]
    tsq = next(r for r in rows if r["metric"] == "tsq_mean")
    # Paired by scenario across the two real jobs; with fewer scenarios than the compare's
    # minimum the difference is shown but no verdict is called (analysis/compare.py).
    assert N_TASKS < MIN_PAIRED_SCENARIOS
    assert tsq["n_paired"] == N_TASKS and tsq["delta"] == -1.0
    assert tsq["verdict"] == TOO_FEW  # "cannot tell (< 10 scenarios)"
    text = report.read_text()
    assert "Harbor's own pass@k" in text and "bundled sample" in text
