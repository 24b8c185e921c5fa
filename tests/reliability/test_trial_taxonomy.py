"""Every trial ends as scored | agent_failed | infra_failed | harness_failed | interrupted, and
both sides of the agent's status file agree: what agents/records.py writes is what
analysis/files.py reads. The report counts each class and keeps infra and harness failures and
interrupted trials out of TSQ."""

from __future__ import annotations

import re
from typing import get_args

import pytest

from agents.records import write_status
from analysis import files
from analysis.synthetic import record, write_job, write_trial
from analysis.tables import load
from contracts.agent_status import AgentStatus as WrittenStatus
from tests.support.cli import bankbench

REWARD = {"tsq": 0.5, "precision": 0.5, "recall": 0.5, "param_validity": 1.0,
          "multiset_f1": 0.5, "goal_coverage": 0.5}

# (agent status written by the agent or None, reward?, Harbor exception) -> class, reason part
CASES = [
    ("ok", True, None, "scored", ""),
    ("agent_error", True, None, "agent_failed", "step limit"),
    ("agent_error", False, "AgentTimeoutError", "agent_failed", "AgentTimeoutError"),
    ("infra_error", True, None, "infra_failed", "LLM request failed"),
    # The bank was unusable: whatever the verifier made of the empty intent log is no score.
    ("harness_error", True, None, "harness_failed", "bank unavailable"),
    # The environment did not start: the harness's. An exception while the agent ran: the
    # agent's, whatever its name.
    (None, False, "EnvironmentStartTimeoutError", "harness_failed", "EnvironmentStart"),
    ("ok", False, "RuntimeError", "agent_failed", "RuntimeError"),
    (None, False, "CancelledError", "interrupted", "interrupted (Harbor was stopped)"),
    # The agent made its attempt, then neither reward nor error: the harness lost the score.
    ("ok", False, None, "harness_failed", "without a reward"),
    # Nothing recorded and no attempt made: what Harbor leaves for a trial it cancels on its
    # way down when its sweep is killed (analysis.status.is_interrupted).
    ("infra_error", False, None, "interrupted", "interrupted (Harbor was stopped)"),
]
# Attempts each agent reports: one, but none in the killed sweep's trial (the last case).
ATTEMPTS = [1] * (len(CASES) - 1) + [0]
REASONS = {"ok": None, "agent_error": "step limit reached without a final answer",
           "infra_error": "LLM request failed after 4 tries: 503",
           "harness_error": "bank unavailable: `/app/bank tools` exited 78: cannot read"}


def test_writer_and_reader_agree_on_the_status_file(tmp_path):
    written = set(get_args(WrittenStatus.model_fields["status"].annotation))
    read = set(get_args(files.AgentStatus.model_fields["status"].annotation))
    assert written == read == {"ok", "agent_error", "infra_error", "harness_error"}
    assert files.AGENT_STATUS_FILE == "agent_status.json"
    for status in sorted(written):
        logs = tmp_path / status / "agent"
        logs.mkdir(parents=True)
        write_status(logs, WrittenStatus(status=status, reason=REASONS[status], attempts=2,
                                         llm_calls=3, failed_llm_calls=1))
        got = files.read_agent_status(tmp_path / status, issues := [])
        assert issues == [] and got is not None
        assert (got.status, got.reason, got.attempts) == (status, REASONS[status], 2)


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory):
    job_dir = write_job(tmp_path_factory.mktemp("jobs") / "taxonomy", 2,
                        n_total_trials=len(CASES))
    for i, (status, has_reward, exception, _, _) in enumerate(CASES):
        trial = write_trial(job_dir, f"banking-{i:03d}__t{i}", scenario_id=f"banking-{i:03d}",
                            records=[record(trial_name=f"t{i}")],
                            rewards=REWARD if has_reward else None, exception_type=exception,
                            # what the agent reports to Harbor in process (result.json)
                            agent_status={"status": status, "reason": REASONS[status],
                                          "attempts": ATTEMPTS[i]}
                            if status is not None else None)
        if status is not None:  # the agent's own writer, not a hand-made JSON
            write_status(trial / "agent", WrittenStatus(status=status, reason=REASONS[status]))
    return job_dir


def test_every_finished_trial_lands_in_one_of_five_classes(job):
    trials = load(job).trials.sort_values("trial")
    assert list(trials.status) == [case[3] for case in CASES]
    for (_, _, _, _, words), reason in zip(CASES, trials.status_reason, strict=True):
        assert words in reason
    in_quality = dict(zip(trials.status, trials.in_quality, strict=False))
    assert in_quality["scored"] and in_quality["agent_failed"]
    assert not in_quality["infra_failed"] and not in_quality["harness_failed"]
    assert not in_quality["interrupted"]


def test_report_counts_each_class(job, tmp_path):
    done = bankbench("report", str(job), "--out", str(tmp_path), "--no-plots")
    assert done.returncode == 0, done.stderr
    report = (tmp_path / "report.md").read_text()
    section = report.split("## Trials", 1)[1].splitlines()
    header = next(ln for ln in section if ln.startswith("| source | level | trials"))
    row = next(ln for ln in section if ln.startswith("| taxonomy |"))
    cells = dict(zip([c.strip() for c in header.strip("|").split("|")],
                     [c.strip() for c in row.strip("|").split("|")], strict=True))
    assert (cells["trials"], cells["scored"], cells["agent failed"], cells["infra failed"],
            cells["harness failed"], cells["interrupted"], cells["running"]
            ) == ("10", "1", "3", "1", "3", "2", "0")
    assert (cells["counted in quality"], cells["excluded"], cells["excluded share"]
            ) == ("4", "6", "0.6")
    # the progress line names the classes too
    counts = re.search(r"10 trials \(([^)]*)\)", done.stderr)
    assert counts, done.stderr
    named = {part.split()[1]: int(part.split()[0]) for part in counts.group(1).split(", ")}
    assert named == {"scored": 1, "agent_failed": 3, "infra_failed": 1, "harness_failed": 3,
                     "interrupted": 2}
    assert "`interrupted` trials (Harbor was stopped" in report
