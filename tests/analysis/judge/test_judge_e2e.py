"""`bankbench judge` end to end: a real `harbor run` of Harbor's oracle agent on sample tasks,
judged by the real Dynamo frontend + mocker whose answers a response-replay trace scripts
(one session per scenario, one turn per sample). Verdicts land beside the trials,
reward.json is untouched, an unusable answer is recorded as unparseable, a re-run skips
judged trials and asks the unparseable one again, --force asks all, a pass whose verdicts are
mostly unusable exits 1 with a warning that the report repeats, and the report shows the judge
figures and the judge model."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.judge.prompt import DEFAULT_VERSION
from contracts.judge import JUDGE_DIR, JudgeRecord, record_name
from tests.support.built_tasks import CHEAP_LABELS
from tests.support.cli import bankbench_here

pytestmark = [pytest.mark.dynamo, pytest.mark.harbor, pytest.mark.slow,
              pytest.mark.timeout(900)]
REPO = Path(__file__).resolve().parents[3]
SECRET = "sk-judge-test-never-on-disk-91c"
ANNOTATION = "output_replay_id:{scenario_id}:{sample}"


def _answer(tsq: float, ac: float) -> str:
    return json.dumps({"tool_selection_quality": {"score": tsq, "rationale": "calls fit"},
                       "action_completion": {"score": ac, "rationale": "goals done"}})


# scenario → its scripted answers, one per sample (turn k answers sample k)
SCRIPT = {
    "banking-000": [_answer(1.0, 0.75), _answer(0.5, 0.25)],
    # prose and a code fence around the JSON are tolerated
    "banking-001": ["Here is my verdict:\n```json\n" + _answer(0.8, 0.6) + "\n```",
                    _answer(0.8, 0.6)],
    "banking-002": ["I think the assistant did fine overall.", "score: 1"],
}
# benchmarks/judge_agreement.py: synthetic perfect/imperfect sessions of held-out gold
AGREEMENT = {
    "heldout-banking-000-perfect": [_answer(1.0, 1.0)],
    "heldout-banking-000-imperfect": [_answer(0.2, 0.1)],
    "heldout-banking-001-perfect": [_answer(0.9, 0.4)],
    "heldout-banking-001-imperfect": ["no JSON here"],
    "heldout-banking-002-perfect": [_answer(0.3, 0.6)],
    "heldout-banking-002-imperfect": [_answer(0.6, 0.2)],
}


def _env() -> dict[str, str]:
    return {**os.environ, "HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "BANKBENCH_TEST_JUDGE_KEY": SECRET}


def _cli(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bankbench", *args], env=_env(), cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(autouse=True)
def judge_key(monkeypatch):
    """The key the in-process `judge` and `report` runs read (`_here`)."""
    monkeypatch.setenv("BANKBENCH_TEST_JUDGE_KEY", SECRET)


def _here(*args: str) -> subprocess.CompletedProcess:
    """`bankbench judge` / `report` in this process: what they print, write and return is the
    command's, without a CLI start-up each (9 of them here, ~1-3 CPU-s apiece)."""
    return bankbench_here(*args, cwd=REPO)


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    from bankbench.serve import api, replay

    root = tmp_path_factory.mktemp("judge-stack")
    trace = replay.write_trace(root / "trace.jsonl", {**SCRIPT, **AGREEMENT})
    with api.running("cpu-mocker", state_dir=root / "state",
                     options={"speedup_ratio": 10, "replay_trace": str(trace)}) as state:
        yield state


@pytest.fixture(scope="module")
def oracle_job(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("judge-job")
    built = _cli("tasks", "build", "--source", "sample", "--out", str(root / "tasks"),
                 "--limit", "3", "--labels", CHEAP_LABELS)
    assert built.returncode == 0, built.stderr[-2000:]
    done = subprocess.run(
        [str(Path(sys.executable).parent / "harbor"), "run", "--path", str(root / "tasks"),
         "--agent", "oracle", "--env", "environments.local:LocalEnvironment",
         "--jobs-dir", str(root / "jobs"), "--job-name", "oracle", "-n", "2", "-q"],
        cwd=REPO, env=_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return root / "jobs" / "oracle"


def _trials(job: Path) -> dict[str, Path]:
    return {p.name.split("__")[0]: p for p in job.iterdir() if (p / "config.json").is_file()}


def _rewards(job: Path) -> dict[str, str]:
    return {str(p.relative_to(job)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(job.rglob("reward.json"))}


def _judge(job: Path, stack, *extra: str) -> subprocess.CompletedProcess:
    return _here("judge", str(job), "--base-url", stack.base_url, "--model", stack.model,
                "--api-key-env", "BANKBENCH_TEST_JUDGE_KEY", "--nvext-annotation", ANNOTATION,
                *extra)


def test_a_judged_job_keeps_its_rewards_and_reports_the_judge(stack, oracle_job, tmp_path):
    job = shutil.copytree(oracle_job, tmp_path / "oracle")
    trials = _trials(job)
    assert sorted(trials) == sorted(SCRIPT)
    before = _rewards(job)
    assert len(before) == 3

    done = _judge(job, stack)
    assert done.returncode == 0, done.stderr
    assert "judged 3 trial(s) (2 ok, 1 unparseable); 0 already judged" in done.stderr
    assert _rewards(job) == before  # byte-identical

    name = record_name(DEFAULT_VERSION, stack.model)
    records = {s: JudgeRecord.model_validate_json((t / JUDGE_DIR / name).read_text())
               for s, t in trials.items()}
    first = records["banking-000"]
    assert (first.status, first.temperature, first.samples_requested) == ("ok", 0.0, 1)
    assert first.tool_selection_quality.mean == 1.0 and first.action_completion.mean == 0.75
    assert first.model == stack.model and len(first.prompt_sha256) == 64
    assert records["banking-001"].action_completion.mean == pytest.approx(0.6)
    bad = records["banking-002"]
    assert bad.status == "unparseable" and bad.samples[0].status == "unparseable"
    assert bad.tool_selection_quality.mean is None and bad.tool_selection_quality.n == 0
    assert "did fine overall" in bad.samples[0].raw
    for trial in trials.values():
        assert SECRET not in (trial / JUDGE_DIR / name).read_text()

    again = _judge(job, stack)  # the unparseable verdict is asked again, the others kept
    assert again.returncode == 0, again.stderr
    assert "judged 1 trial(s) (1 unparseable); 2 already judged" in again.stderr
    forced = _judge(job, stack, "--force")
    assert forced.returncode == 0, forced.stderr
    assert "judged 3 trial(s) (2 ok, 1 unparseable); 0 already judged" in forced.stderr

    report = _here("report", str(job), "--no-plots")
    assert report.returncode == 0, report.stderr
    text = (job.parent / "oracle-report" / "report.md").read_text()
    assert "## Judge metrics" in text and stack.model in text and DEFAULT_VERSION in text
    judge_rows = [line for line in text.splitlines()
                  if line.startswith("|") and stack.model in line and "0.9" in line]
    # TSQ mean over the two parsed trials: (1.0 + 0.8) / 2; AC (0.75 + 0.6) / 2
    assert judge_rows and "0.675" in judge_rows[0], text


def test_a_judge_pass_whose_verdicts_are_mostly_unusable_fails_loudly(stack, oracle_job,
                                                                      tmp_path):
    job = shutil.copytree(oracle_job, tmp_path / "oracle")
    # every trial gets banking-002's answers: prose, no verdict JSON
    done = _here("judge", str(job), "--base-url", stack.base_url, "--model", stack.model,
                 "--nvext-annotation", "output_replay_id:banking-002:{sample}")
    assert done.returncode == 1, done.stderr
    assert "judged 3 trial(s) (3 unparseable)" in done.stderr
    assert "WARNING: 3 of 3 verdicts have no usable answer" in done.stderr
    report = _here("report", str(job), "--no-plots")
    assert report.returncode == 0, report.stderr
    text = (job.parent / "oracle-report" / "report.md").read_text()
    section = text.split("## Judge metrics", 1)[1]
    assert "WARNING: 3 of 3 judge verdicts have no usable answer" in section


def test_several_samples_give_their_mean_and_spread(stack, oracle_job, tmp_path):
    job = shutil.copytree(oracle_job, tmp_path / "oracle")
    done = _judge(job, stack, "--samples", "2")
    assert done.returncode == 0, done.stderr
    trial = _trials(job)["banking-000"]
    record = JudgeRecord.model_validate_json(
        (trial / JUDGE_DIR / record_name(DEFAULT_VERSION, stack.model)).read_text())
    assert record.temperature == 0.7 and record.samples_requested == 2
    assert record.tool_selection_quality.mean == pytest.approx(0.75)
    assert record.tool_selection_quality.std == pytest.approx(0.25)
    assert record.action_completion.mean == pytest.approx(0.5)
    assert record.tool_selection_quality.n == 2


def test_judge_agreement_benchmark_against_the_scripted_judge(stack):
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "judge_agreement.py"), "--base-url",
         stack.base_url, "--model", stack.model, "--gold", "heldout", "--limit", "3",
         "--nvext-annotation", ANNOTATION, "--json"],
        env=_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])["heldout"]
    assert (result["scenarios"], result["scored_pairs"], result["unusable"]) == (3, 2, 1)
    # pairs 000 and 002: TSQ orders 000 right (1.0 > 0.2) and 002 wrong (0.3 < 0.6)
    assert result["tool_selection_quality"] == {
        "ordering": 0.5, "perfect_high": 0.5, "imperfect_low": 0.5}
    assert result["action_completion"] == {
        "ordering": 1.0, "perfect_high": 1.0, "imperfect_low": 1.0}
    assert "heldout  tool_selection_quality" in done.stdout


@pytest.mark.parametrize(("faults", "status", "requests"), [
    (["http_429", "http_503", "http_500"], "ok", 4),   # retried through to the answer
    (["http_400"], "error", 1),                         # a client error is final
])
def test_the_judge_client_retries_429_and_5xx_only(stack, faults, status, requests):
    """Dynamo cannot be made to fail on demand, so the fault-injecting proxy sits in front."""
    import asyncio

    from analysis.judge.client import JudgeClient
    from tests.support.fault_proxy import FaultProxy, FaultSchedule

    async def run():
        async with FaultProxy(stack.base_url, FaultSchedule(list(faults))) as proxy:
            client = JudgeClient(proxy.base_url, stack.model, api_key=SECRET, max_wait_s=0.2)
            try:
                sample = await asyncio.to_thread(
                    client.sample, [{"role": "user", "content": "judge"}], 0.0,
                    {"annotations": ["output_replay_id:banking-000:0"]})
            finally:
                client.close()
            return sample, proxy

    sample, proxy = asyncio.run(run())
    assert sample.status == status and len(proxy.seen) == requests
    if status == "ok":
        assert sample.tool_selection_quality.score == 1.0
    else:
        assert "HTTP 400" in sample.error
    headers = {k.lower(): v for k, v in proxy.requests[0][0].items()}
    assert headers.get("authorization") == f"Bearer {SECRET}"  # the key goes only here
