import json

import pytest
from pydantic import ValidationError

from bankbench.sweep import harbor_job
from bankbench.sweep.errors import SweepError
from bankbench.sweep.manifest import check_resumable, save_manifest
from contracts.agent_status import PROJECT_AGENT
from contracts.sweep import SweepConfig, SweepManifest


def _config(**kw):
    base = {"levels": [1, 2], "base_url": "http://127.0.0.1:9/v1", "model": "m"}
    base.update(kw)
    return SweepConfig.model_validate(base)


def test_exactly_one_server_source_is_required():
    with pytest.raises(ValidationError, match="exactly one"):
        SweepConfig(levels=[1])
    with pytest.raises(ValidationError, match="exactly one"):
        SweepConfig(levels=[1], profile="cpu-mocker", base_url="http://x/v1", model="m")
    with pytest.raises(ValidationError, match="needs --model"):
        SweepConfig(levels=[1], base_url="http://x/v1")


def test_a_sweep_takes_reviewed_labels_not_a_model():
    with pytest.raises(ValidationError, match="tasks build --labels model"):
        _config(labels="model")
    assert _config().labels == "sentence" and _config(labels="file:x.json").labels == "file:x.json"


def test_cli_defaults_and_help_come_from_the_config_model():
    import argparse

    from bankbench.commands import sweep as command

    parser = argparse.ArgumentParser()
    command.register(parser.add_subparsers())
    args = parser.parse_args(["sweep", "--profile", "cpu-mocker"])
    defaults = SweepConfig(profile="cpu-mocker")
    assert args.levels == defaults.levels and args.attempts == defaults.attempts
    assert (args.source, args.mode, args.labels, args.env) == (
        defaults.source, defaults.mode, defaults.labels, defaults.env)
    assert command._explicit_options(args) == {"profile": "cpu-mocker"}
    sub = parser._subparsers._group_actions[0].choices["sweep"]
    helps = {a.dest: a.help for a in sub._actions}
    assert helps["attempts"].startswith(SweepConfig.model_fields["attempts"].description[:40])


@pytest.mark.parametrize("levels", [[], [0], [1, 1]])
def test_bad_levels_are_rejected(levels):
    with pytest.raises(ValidationError):
        _config(levels=levels)


def test_fingerprint_tracks_what_is_measured():
    assert _config().fingerprint() == _config().fingerprint()
    assert _config().fingerprint() != _config(attempts=2).fingerprint()
    assert _config().differences(_config(levels=[1, 4])) == ["levels: [1, 4] -> [1, 2]"]


def _manifest(config: SweepConfig) -> SweepManifest:
    return SweepManifest(
        name="s", config=config, fingerprint=config.fingerprint(),
        levels=config.levels, attempts=config.attempts, server_profile=None,
        base_url="http://127.0.0.1:9/v1", model="m", tasks_dir="t", n_tasks=1,
        started_at="2026-01-01T00:00:00Z",
    )


def test_resume_refuses_a_changed_configuration(tmp_path):
    save_manifest(tmp_path, _manifest(_config()))
    assert check_resumable(_config(), tmp_path).fingerprint == _config().fingerprint()
    with pytest.raises(SweepError, match="attempts: 1 -> 3"):
        check_resumable(_config(attempts=3), tmp_path)


def test_resume_of_a_corrupt_manifest_names_the_file(tmp_path):
    (tmp_path / "sweep.json").write_text("{not json")
    with pytest.raises(SweepError, match="sweep.json is corrupt"):
        check_resumable(_config(), tmp_path)


def _trial(job, name, finished):
    d = job / name
    d.mkdir(parents=True)
    (d / "config.json").write_text("{}")
    if finished:
        (d / "result.json").write_text(json.dumps(_result(name, verifier_result={
            "rewards": {"tsq": 1.0}})))


def _result(name, **fields):
    """A result.json as Harbor writes it (trial and task name always, the project's agent),
    with `fields`."""
    return {"trial_name": name, "task_name": name.split("__")[0],
            "config": {"agent": {"import_path": PROJECT_AGENT}}, **fields}


def test_job_state_from_disk(tmp_path):
    job = tmp_path / "c1"
    assert harbor_job.job_state(job) is harbor_job.JobState.ABSENT
    job.mkdir()
    (job / "config.json").write_text("{}")
    _trial(job, "banking-000__a", finished=True)
    _trial(job, "banking-001__b", finished=False)
    assert harbor_job.job_state(job) is harbor_job.JobState.PARTIAL
    (job / "result.json").write_text(json.dumps({"finished_at": "x", "n_total_trials": 2}))
    # The job says finished but one trial has no result: still partial (killed mid-write).
    assert harbor_job.job_state(job) is harbor_job.JobState.PARTIAL
    (job / "banking-001__b" / "result.json").write_text('{"trial_na')
    # A result.json cut short by a kill is not a finished trial.
    assert harbor_job.job_state(job) is harbor_job.JobState.PARTIAL
    (job / "banking-001__b" / "result.json").write_text(json.dumps(_result(
        "banking-001__b", exception_info={"exception_type": "CancelledError"})))
    # Cancelled because Harbor was stopped: not finished either.
    assert harbor_job.job_state(job) is harbor_job.JobState.PARTIAL
    (job / "banking-001__b" / "result.json").write_text(json.dumps(_result(
        "banking-001__b", exception_info={"exception_type": "AgentTimeoutError"})))
    assert harbor_job.job_state(job) is harbor_job.JobState.COMPLETE


def test_unfinished_results_are_moved_aside_not_deleted(tmp_path):
    job = tmp_path / "c1"
    names = ("banking-000__a", "banking-001__b", "banking-002__c", "banking-003__d",
             "banking-005__f", "banking-006__g")
    for name in names:
        _trial(job, name, finished=True)
    _trial(job, "banking-004__e", finished=False)  # Harbor itself reruns this one
    (job / "banking-001__b" / "result.json").write_text("")
    # What a killed sweep's Harbor leaves for a trial it cancelled on its way down: no
    # exception, no verifier result, an agent that made no attempt.
    (job / "banking-002__c" / "result.json").write_text(json.dumps(_result(
        "banking-002__c", exception_info=None, verifier_result=None)))
    (job / "banking-003__d" / "result.json").write_text(json.dumps(_result(
        "banking-003__d", exception_info={"exception_type": "RuntimeError"})))
    (job / "banking-005__f" / "result.json").write_text(json.dumps(_result(
        "banking-005__f", exception_info={"exception_type": "CancelledError"},
        agent_result={"metadata": {"status": "infra_error", "attempts": 1}})))
    # An agent that made its attempt, then no reward and no error: a harness fault, kept.
    (job / "banking-006__g" / "result.json").write_text(json.dumps(_result(
        "banking-006__g", exception_info=None, verifier_result=None,
        agent_result={"metadata": {"status": "ok", "attempts": 1}})))
    moved = harbor_job.quarantine_unfinished_trials(job, tmp_path / "quarantine")
    assert moved == [(tmp_path / "quarantine" / "banking-001__b", "cut short"),
                     (tmp_path / "quarantine" / "banking-002__c", "interrupted"),
                     (tmp_path / "quarantine" / "banking-005__f", "interrupted")]
    assert (moved[0][0] / "config.json").exists()
    # a trial that failed on its own is a result, and stays
    assert [p.name for p in harbor_job.trial_dirs(job)] == [
        "banking-000__a", "banking-003__d", "banking-004__e", "banking-006__g"]


@pytest.mark.parametrize("exception, reward, agent", [
    (None, None, None), (None, None, {"status": "ok", "attempts": 1}),
    (None, None, {"status": "infra_error", "attempts": 0}),
    (None, {"tsq": 0.5}, None), ("CancelledError", None, {"status": "agent_error", "attempts": 2}),
    ("RuntimeError", None, None), ("AgentTimeoutError", {"tsq": 0.0}, None),
])
def test_the_sweep_reruns_exactly_what_analysis_calls_interrupted(tmp_path, exception, reward,
                                                                 agent):
    """One rule: the sweep moves a trial aside for a rerun iff the report's status says
    interrupted (analysis.status.is_interrupted)."""
    from analysis.status import trial_status

    trial = tmp_path / "c1" / "banking-000__a"
    trial.mkdir(parents=True)
    (trial / "result.json").write_text(json.dumps(_result(
        trial.name, exception_info={"exception_type": exception} if exception else None,
        verifier_result={"rewards": reward} if reward else None,
        agent_result={"metadata": agent} if agent else None)))
    analysed = trial_status(trial, job_finished=True)[0]
    assert (harbor_job.trial_problem(trial) == "interrupted") == (analysed == "interrupted")
    nothing_recorded = exception is None and reward is None and not (agent or {}).get("attempts")
    assert (analysed == "interrupted") == (exception == "CancelledError" or nothing_recorded)


def test_harbor_run_argv_carries_level_attempts_and_agent_options(tmp_path):
    cfg = _config(attempts=3, agent_kwargs={"self_eval": "true"})
    cmd = harbor_job.harbor_run_argv(
        cfg, tasks_dir=tmp_path / "t", sweep_dir=tmp_path, job_name="c2", level=2,
        base_url="http://h/v1", model="m",
    )
    joined = " ".join(cmd)
    assert "-n 2" in joined and "-k 3" in joined and "--job-name c2" in joined
    assert "--ak base_url=http://h/v1" in joined and "--ak self_eval=true" in joined
    assert "agents.banking:BankingAgent" in cmd
    assert "environments.local:LocalEnvironment" in cmd
    assert harbor_job.SKIP_PROVIDER_MAPPING in cmd  # no LiteLLM import in every Harbor process


def test_conversation_mode_and_its_turn_limit():
    from contracts.conversation import DEFAULT_MAX_TURNS

    convo = _config(mode="conversation")
    assert convo.max_turns == DEFAULT_MAX_TURNS
    with pytest.raises(ValidationError):
        _config(mode="conversation", max_turns=0)
    # The mode is what is measured: a resumed sweep may not switch it.
    assert convo.fingerprint() != _config().fingerprint()
    assert _config().differences(convo) == ["mode: 'conversation' -> 'goals'"]
    assert (_config(mode="conversation", max_turns=3).fingerprint()
            != convo.fingerprint())
    # Outside conversation mode the turn limit changes nothing, nor the fingerprint, which
    # is the one sweeps made before the option existed carry.
    assert _config(max_turns=3).fingerprint() == _config().fingerprint()
    import hashlib

    # (nor do the fields added since: shards when 1, steady at its default, ray and the
    # window's cut never)
    before = {k: v for k, v in _config().model_dump(mode="json").items()
              if k not in ("max_turns", "shards", "ray", "steady", "warmup_share",
                           "keep_drain")}
    blob = json.dumps(before, sort_keys=True).encode()
    assert _config().fingerprint() == hashlib.sha256(blob).hexdigest()[:16]


def test_cli_max_turns_only_with_conversation_mode(capsys):
    import argparse

    from bankbench.cli import main
    from bankbench.commands import sweep as command

    parser = argparse.ArgumentParser()
    command.register(parser.add_subparsers())
    args = parser.parse_args(["sweep", "--profile", "cpu-mocker", "--mode", "conversation",
                              "--max-turns", "4"])
    assert command._explicit_options(args) == {"profile": "cpu-mocker",
                                               "mode": "conversation", "max_turns": 4}
    assert SweepConfig.model_validate(
        command._explicit_options(args, all_fields=True)).max_turns == 4
    with pytest.raises(SystemExit, match="--max-turns applies to --mode conversation only"):
        main(["sweep", "--profile", "cpu-mocker", "--max-turns", "4"])


def test_tasks_are_built_in_the_sweeps_mode(tmp_path, monkeypatch):
    """What the sweep hands the task builder (a stand-in that records its arguments)."""
    from bankbench.sweep import tasks as sweep_tasks
    from tasks.banking import build

    seen = []

    def builder(**kwargs):
        seen.append(kwargs)
        (kwargs["out"] / "banking-000").mkdir(parents=True)
        (kwargs["out"] / "banking-000" / "task.toml").write_text("")

    monkeypatch.setattr(build, "build_tasks", builder)
    convo = SweepConfig(levels=[1], profile="cpu-mocker", source="sample",
                        mode="conversation", max_turns=4)
    assert sweep_tasks.prepare_tasks(convo, tmp_path / "a").n_tasks == 1
    goals = SweepConfig(levels=[1], profile="cpu-mocker", source="sample")
    sweep_tasks.prepare_tasks(goals, tmp_path / "b")
    assert (seen[0]["mode"], seen[0]["max_turns"]) == ("conversation", 4)
    assert seen[1]["mode"] == "goals" and "max_turns" not in seen[1]


def test_a_conversation_sweep_builds_conversation_tasks(tmp_path):
    """The real builder, once it knows conversation mode: the turn limit reaches the task."""
    from bankbench.sweep.tasks import prepare_tasks
    from contracts.conversation import CUSTOMER_FILE, CustomerBrief

    config = SweepConfig(levels=[1], profile="cpu-mocker", source="sample", limit=1,
                         mode="conversation", max_turns=3)
    prepared = prepare_tasks(config, tmp_path)
    task = next(p for p in prepared.tasks_dir.iterdir() if (p / "task.toml").exists())
    brief = CustomerBrief.model_validate_json(
        (task / "environment" / CUSTOMER_FILE).read_text())
    assert brief.max_turns == 3
    assert 'mode = "conversation"' in (task / "task.toml").read_text()


def test_resuming_a_sweep_checks_only_a_typed_max_turns(tmp_path, monkeypatch):
    """The stored config always holds max_turns: resuming a goals sweep must not trip on it."""
    from bankbench.cli import main
    from bankbench.commands import sweep as command
    from bankbench.sweep import runner

    monkeypatch.setattr(command, "_stop_cleanly_on_signals", dict)  # keep pytest's signal handlers
    goals = SweepConfig(levels=[1], profile="cpu-mocker")
    save_manifest(tmp_path, _manifest(goals))
    resumed = []
    monkeypatch.setattr(runner, "run_sweep", lambda config, sweep_dir, resume, **_: resumed.append(
        (config, resume)) or sweep_dir / "report.md")
    assert main(["sweep", "--resume", str(tmp_path)]) == 0
    assert resumed == [(goals, True)]
    with pytest.raises(SystemExit, match="--max-turns applies to --mode conversation only"):
        main(["sweep", "--resume", str(tmp_path), "--max-turns", "3"])


def test_no_plots_reaches_the_report_of_a_sweep_and_of_a_router_sweep(tmp_path, monkeypatch):
    """--no-plots is a flag of this run, not of the sweep: the report is written without its
    figures, and a resume without the flag draws them."""
    from bankbench.cli import main
    from bankbench.commands import sweep as command
    from bankbench.sweep import routers, runner

    monkeypatch.setattr(command, "_stop_cleanly_on_signals", dict)
    save_manifest(tmp_path, _manifest(SweepConfig(levels=[1], profile="cpu-mocker")))
    draws = []
    monkeypatch.setattr(runner, "run_sweep", lambda config, sweep_dir, resume, **kw: draws.append(
        kw["draw"]) or sweep_dir / "report.md")
    assert main(["sweep", "--resume", str(tmp_path), "--no-plots"]) == 0
    assert main(["sweep", "--resume", str(tmp_path)]) == 0
    monkeypatch.setattr(routers, "run_router_sweep", lambda *a, **kw: draws.append(
        kw["draw"]) or [])
    assert main(["sweep", "--profile", "cpu-mocker", "--routers", "kv,round-robin",
                 "--out", str(tmp_path / "r"), "--no-plots"]) == 0
    assert draws == [False, True, False]


def test_a_typed_set_on_resume_keeps_the_stored_ones_beside_it(tmp_path, monkeypatch):
    """A scripted mocker sweep stored a replay trace it was not typed with: typing one --set
    again on resume is checked key by key, not taken as the whole set."""
    from bankbench.cli import main
    from bankbench.commands import sweep as command
    from bankbench.sweep import runner

    monkeypatch.setattr(command, "_stop_cleanly_on_signals", dict)
    stored = SweepConfig(levels=[1], profile="cpu-mocker",
                         server_options={"speedup_ratio": "10", "replay_trace": "/x.jsonl"})
    save_manifest(tmp_path, _manifest(stored))
    resumed = []
    monkeypatch.setattr(runner, "run_sweep", lambda config, sweep_dir, resume, **_: resumed.append(
        config) or sweep_dir / "report.md")
    assert main(["sweep", "--resume", str(tmp_path), "--set", "speedup_ratio=10"]) == 0
    assert resumed == [stored]
    assert main(["sweep", "--resume", str(tmp_path), "--set", "speedup_ratio=2"]) == 0
    assert resumed[-1].server_options == {"speedup_ratio": "2", "replay_trace": "/x.jsonl"}
