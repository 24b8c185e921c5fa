"""Hand-made jobs and sweeps for the quality tests: every trial's scores chosen by the test."""

from __future__ import annotations

from pathlib import Path

from analysis.synthetic import write_job, write_sweep_manifest, write_task_stub, write_trial

OK = {"status": "ok", "reason": None}
INFRA = {"status": "infra_error", "reason": "connection refused"}


def rewards(tsq: float, solved: bool | None = None) -> dict[str, float]:
    """A reward.json whose precision/recall make `solved` (P = R = 1) what is asked."""
    pr = 1.0 if (solved if solved is not None else tsq >= 1.0) else min(tsq, 0.5)
    return {"tsq": tsq, "precision": pr, "recall": pr, "param_validity": 1.0,
            "multiset_f1": tsq, "goal_coverage": tsq}


def write_trials(job_dir: Path, scores: dict[str, list[float | dict]], *,
                 tasks_dir: Path | None = None, prefix: str = "") -> None:
    """`scores[scenario]` lists its trials: a TSQ (solved iff 1.0) or a dict of options
    `{"tsq", "solved", "infra"}`."""
    for scenario, trials in scores.items():
        for repeat, item in enumerate(trials):
            spec = item if isinstance(item, dict) else {"tsq": item}
            write_trial(job_dir, f"{scenario}__{prefix}{repeat}", scenario_id=scenario,
                        rewards=rewards(spec["tsq"], spec.get("solved")),
                        agent_status=INFRA if spec.get("infra") else OK, tasks_dir=tasks_dir)


def job(job_dir: Path, scores: dict[str, list[float | dict]], *, level: int = 2,
        tasks_dir: Path | None = None) -> Path:
    write_job(job_dir, level, n_total_trials=sum(map(len, scores.values())))
    write_trials(job_dir, scores, tasks_dir=tasks_dir)
    return job_dir


def sweep(sweep_dir: Path, by_level: dict[int, dict[str, list[float | dict]]],
          **manifest) -> Path:
    write_sweep_manifest(sweep_dir, sorted(by_level), **manifest)
    for level, scores in by_level.items():
        job(sweep_dir / f"c{level}", scores, level=level)
    return sweep_dir


def tasks(tasks_dir: Path, scenarios: list[str], **stub) -> Path:
    for scenario in scenarios:
        write_task_stub(tasks_dir, scenario, **stub)
    return tasks_dir
