"""`bankbench export --format nel`: per-problem results.jsonl and an eval bundle per level and
per arm, read back by the real `nel` (nemo-evaluator 0.3.0, in a venv of its own)."""

from __future__ import annotations

import json
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest

from analysis.export.layout import MANIFEST_FILE
from analysis.export.nel import RESULTS_FILE, export_nel, problem_of
from analysis.synthetic import T0, write_job, write_sweep_manifest, write_trial
from analysis.tables import AnalysisInputError
from bankbench.cli import main
from contracts.sweep import RouterRun, RouterSweepManifest, SweepConfig
from tests.support.tool_venv import tool_python

NEL_PINS = ["nemo-evaluator[stats]==0.3.0"]

# solved per scenario at two levels: 002 and 003 regress, 005 improves, 001 and 006 stay
# right, 004 stays wrong.
SOLVED = {1: [1, 1, 1, 0, 0, 1], 4: [1, 0, 0, 0, 1, 1]}


def _trial(job: Path, scenario: str, name: str, solved: float, *, start_s: float = 0,
           status: str = "ok", rewards: bool = True) -> None:
    tsq = 1.0 if solved else 0.5
    write_trial(job, name, scenario_id=scenario, started_at=T0 + timedelta(seconds=start_s),
                rewards={"tsq": tsq, "precision": tsq, "recall": 1.0, "param_validity": 1.0,
                         "multiset_f1": tsq, "goal_coverage": 1.0, "solved": solved}
                if rewards else None,
                agent_status={"status": status, "reason": None, "attempts": 1},
                tsq_details={"expected_tools": ["get_account_balance"], "goals": [],
                             "scored_attempt": 1,
                             "attempts": [{"attempt": 1, "reward": {"tsq": tsq}, "calls": [
                                 {"attempt": 1, "tool": "get_account_balance",
                                  "arguments": {}, "valid": True}]}]})


def flips_sweep(sweep: Path, solved: dict[int, list[int]] = SOLVED) -> Path:
    write_sweep_manifest(sweep, list(solved), base_url="http://127.0.0.1:8000/v1")
    for level, values in solved.items():
        job = write_job(sweep / f"c{level}", n_concurrent=level)
        for i, value in enumerate(values, start=1):
            _trial(job, f"banking-{i:03d}", f"banking-{i:03d}__c{level}", float(value))
        # an infra failure: left out, never a flip
        _trial(job, "banking-009", f"banking-009__c{level}", 0.0, status="infra_error",
               rewards=False)
    return sweep


def results(path: Path) -> list[dict]:
    return [json.loads(line) for line in (path / RESULTS_FILE).read_text().splitlines()]


def test_problem_is_the_dataset_row_and_stable_otherwise():
    assert problem_of("banking-007") == ("banking", 7)
    assert problem_of("telecom-042") == ("telecom", 42)
    domain, idx = problem_of("my-own-task")
    assert domain == "tasks" and idx == problem_of("my-own-task")[1]


def test_one_results_file_and_bundle_per_level(tmp_path):
    sweep = flips_sweep(tmp_path / "sweep")
    manifest = export_nel(sweep)
    out = sweep / "nel"
    assert list(manifest.levels.items()) == [("c1", 6), ("c4", 6)]
    assert manifest.skipped == {"infra_failed": 2}
    for level, values in SOLVED.items():
        lines = results(out / f"c{level}")
        assert [(r["problem_idx"], r["repeat"], r["reward"]) for r in lines] == [
            (i, 0, float(v)) for i, v in enumerate(values, start=1)]
        assert lines[0]["expected_answer"] == "get_account_balance"
        assert lines[0]["model_response"] == "get_account_balance"
        assert lines[0]["scoring_details"]["tsq"] == 1.0
        [bundle_file] = (out / f"c{level}").glob("eval-*.json")
        bundle = json.loads(bundle_file.read_text())
        assert bundle["benchmark"]["name"] == "bankbench-banking"  # the same at every level
        assert bundle["benchmark"]["samples"] == 6
        assert bundle["benchmark"]["scores"]["mean_reward"]["value"] == pytest.approx(
            sum(values) / 6)
        assert bundle["config"]["extra"]["level"] == level
        assert bundle["n_results"] == 6


def test_repeats_are_numbered_by_start_and_tsq_may_be_the_reward(tmp_path):
    job = write_job(tmp_path / "job", n_concurrent=2)
    _trial(job, "banking-003", "banking-003__b", 0.0, start_s=5)
    _trial(job, "banking-003", "banking-003__a", 1.0, start_s=1)
    export_nel(job, tmp_path / "out", reward="tsq")
    lines = results(tmp_path / "out")
    assert [(r["problem_idx"], r["repeat"], r["reward"]) for r in lines] == [
        (3, 0, 1.0), (3, 1, 0.5)]
    with pytest.raises(AnalysisInputError, match="--reward 'turns'"):
        export_nel(job, tmp_path / "out", reward="turns")


def test_each_arm_of_a_router_comparison_gets_its_own_levels(tmp_path):
    root = tmp_path / "cmp"
    for router in ("round-robin", "kv"):
        flips_sweep(root / f"r-{router}")
    root.mkdir(exist_ok=True)
    (root / "routers.json").write_text(RouterSweepManifest(
        name="cmp", routers=["round-robin", "kv"],
        config=SweepConfig(levels=[1, 4], profile="cpu-mocker"),
        fingerprint="x", started_at=T0,
        runs=[RouterRun(router=r, sweep_dir=f"r-{r}", state="complete")
              for r in ("round-robin", "kv")]).model_dump_json())
    assert main(["export", str(root), "--format", "nel"]) == 0
    manifest = json.loads((root / "nel" / MANIFEST_FILE).read_text())
    assert list(manifest["levels"]) == ["r-kv/c1", "r-kv/c4", "r-round-robin/c1",
                                        "r-round-robin/c4"]
    assert len(results(root / "nel" / "r-kv" / "c4")) == 6


def test_reward_is_for_nel_only(tmp_path, capsys):
    assert main(["export", str(tmp_path), "--reward", "tsq"]) == 2
    assert "--format nel only" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_nel_compare_reads_two_levels_and_counts_the_flips(tmp_path):
    """The real `nel compare c1 c4`: the pairs, flips and McNemar it reports are the ones the
    hand-made rewards hold; the bundles validate as nel's own EvalBundle."""
    sweep = flips_sweep(tmp_path / "sweep")
    export_nel(sweep)
    python = tool_python("nel-venv-0.3.0", NEL_PINS)
    nel = python.parent / "nel"
    done = subprocess.run([str(nel), "compare", "c1", "c4", "--format", "json", "--no-report",
                           "--no-strict"], cwd=sweep / "nel", capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout[done.stdout.index("{"):])
    summary = report["flip_report"]["summary"]
    assert (summary["n_paired"], summary["n_regressions"], summary["n_improvements"],
            summary["n_stable_correct"], summary["n_stable_wrong"]) == (6, 2, 1, 2, 1)
    assert report["test_used"] == "mcnemar"
    assert {f["problem_idx"] for f in report["flip_report"]["regressions"]} == {2, 3}
    assert report["score_deltas"]["mean_reward"]["baseline"] == pytest.approx(4 / 6)
    check = ("import sys, pathlib\nfrom nemo_evaluator.schemas import EvalBundle\n"
             "for p in sys.argv[1:]: EvalBundle.model_validate_json(pathlib.Path(p).read_text())")
    bundles = [str(p) for p in sorted((sweep / "nel").glob("c*/eval-*.json"))]
    assert len(bundles) == 2
    valid = subprocess.run([str(python), "-c", check, *bundles], capture_output=True, text=True,
                           timeout=120)
    assert valid.returncode == 0, valid.stderr[-2000:]


def test_a_control_arm_beside_the_levels_is_exported_as_an_arm(tmp_path):
    sweep = flips_sweep(tmp_path / "sweep")
    flips_sweep(sweep / "control", {4: [1, 1, 1, 0, 1, 1]})
    manifest = export_nel(sweep)
    assert list(manifest.levels) == ["c1", "c4", "control/c4"]
    assert [r["reward"] for r in results(sweep / "nel" / "control" / "c4")] == [
        1.0, 1.0, 1.0, 0.0, 1.0, 1.0]
