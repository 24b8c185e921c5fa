"""A sweep directory whose agent replies carry tool calls, some broken by FAULT INJECTION
(tests/support/tool_call_faults.py) from a given level on — written through the agent's own
code: each reply is parsed by its stream parser into the call record's `tool_stream`, and the
trajectory is written by its TrajectoryBuilder, so the reading layer reads what a real trial
leaves. No server, no Harbor run."""

from __future__ import annotations

import json
import random
from datetime import timedelta
from pathlib import Path

from agents.sse import StreamParser, tool_stream
from agents.trajectory import TrajectoryBuilder
from analysis.synthetic import T0, raw_times, record, write_job, write_sweep_manifest, write_trial
from contracts.sweep import LevelRecord, SweepConfig, level_dir, level_dir_name
from tests.support.tool_call_faults import corrupt, frontend_reply

TOOL = {"type": "function", "function": {
    "name": "get_account_balance", "description": "Balance of one account.",
    "parameters": {"type": "object", "properties": {
        "account_number": {"type": "string"},
        "account_type": {"type": "string", "enum": ["checking", "savings"]}},
        "required": ["account_number"]}}}
CALL = ("get_account_balance", {"account_number": "12345678", "account_type": "checking"})
_T0_NS = int(T0.timestamp()) * 1_000_000_000


def _reply(body: bytes, request_id: str, trial: str, scenario: str, step: int, start_ns: int,
           worker: int | None) -> tuple:
    parser = StreamParser()
    parser.feed(body, start_ns + 5_000_000)
    parser.close(start_ns + 20_000_000)
    reply = parser.reply
    rec = record(request_id=request_id, trial_name=trial, scenario_id=scenario, step=step,
                 start_unix_ns=start_ns, finish_reason=reply.finish_reason,
                 **raw_times(5.0, [], 20.0, send_ns=start_ns),
                 server=None if worker is None else {"worker_id": {
                     "prefill_worker_id": worker, "decode_worker_id": worker}})
    rec.tool_stream = tool_stream(reply, {"tools": [TOOL], "tool_choice": "auto"})
    calls = [(t.get("id", ""), t.get("name", ""), t.get("arguments", ""))
             for _, t in sorted(reply.tools.items())]
    return rec, "".join(reply.content), calls


def write_integrity_sweep(sweep_dir: Path, levels: list[int], *, scenarios: int = 12,
                          repeats: int = 2, replies: int = 3, fault: str | None = None,
                          from_level: int = 4, rate: float = 1.0, workers: tuple[int, ...] = (
                              11, 22), seed: int = 0, router: str = "round-robin") -> Path:
    """Levels of `scenarios` x `repeats` trials, each with `replies` agent replies making one
    balance call (and a final text answer); with `fault`, each call reply at levels ≥
    `from_level` is broken that way with probability `rate`. Requests are served by `workers`
    in turn (Dynamo's nvext worker_id); `workers=()` names none."""
    rng = random.Random(seed)
    write_sweep_manifest(sweep_dir, levels, router=router, attempts=repeats,
                         config=SweepConfig(levels=levels, profile="cpu-mocker", router=router,
                                            attempts=repeats),
                         versions={"harbor": "0.25", "bankbench": "0.1.0",
                                   "ai-dynamo": "1.6.1"},
                         level_records=[LevelRecord(level=lv, job_dir=level_dir_name(lv),
                                                    state="complete", router=router)
                                        for lv in levels])
    served = 0
    for level in levels:
        job_dir = write_job(level_dir(sweep_dir, level), level,
                            n_total_trials=scenarios * repeats)
        for repeat in range(repeats):
            for i in range(scenarios):
                scenario = f"banking-{i:03d}"
                name = f"{scenario}__r{repeat}"
                start = _T0_NS + (repeat * scenarios + i) // level * 1_000_000_000
                records, trace = [], TrajectoryBuilder("banking-agent", "0", "m", name,
                                                       tools=[TOOL])
                for step in range(replies):
                    final = step == replies - 1
                    body = frontend_reply([] if final else [CALL], text="Done." if final
                                          else "", reply_id=f"{name}-{step}")
                    if fault and level >= from_level and not final and rng.random() < rate:
                        body = corrupt(body, fault, [TOOL]) or body
                    worker = workers[served % len(workers)] if workers else None
                    served += 1
                    rec, text, calls = _reply(body, f"{level}-{name}-{step}", name, scenario,
                                              step + 1, start + step * 30_000_000, worker)
                    records.append(rec)
                    trace.add_model_turn(rec, text, calls)
                write_trial(job_dir, name, scenario_id=scenario, records=records,
                            rewards={"tsq": 1.0}, agent_status={"status": "ok", "reason": None},
                            started_at=T0 + timedelta(seconds=(start - _T0_NS) / 1e9),
                            phase_s=(0, 0, 0.9, 0.05))
                trace.write(job_dir / name / "agent", records)
    return sweep_dir


def trajectory_of(trial_dir: Path) -> dict:
    return json.loads((trial_dir / "agent" / "trajectory.json").read_text())
