"""The sweep's own requests against the cpu-tiny engine: where one request's time goes.

`benchmarks/cpu_tiny_engine.py --sweep-shaped` runs this. It builds the sample tasks
`./benchmark.sh` runs and sends, per scenario, what one attempt of the banking agent sends (its
own opening messages, tools and request parameters, `agents/react.py`), one request at a time:

- `turn 1 guided`: tool_choice "required" (the frontend's structural tag, compiled by the worker
  into one grammar over the 20 tools), greedy, max_tokens as the sweep's;
- `turn 1 free`: the same messages and tools with tool_choice "auto" (no grammar) and
  min_tokens = max_tokens = --tokens: the bare engine decoding at the sweep's context length;
- `turn 2`: that history plus the guided call and the bank's own mock reply to it, tool_choice
  "auto", as the sweep's second step.

Each row is one request split by the worker's timings line (llamacpp_timings.py): `wait` (from
the worker's send to the first token, less llama.cpp's prompt time: queueing, grammar set-up,
the loopback hop), `prefill` (new prompt tokens), `decode` (per token after the first), and
`outside` (the client's end-to-end time less the worker's: the frontend and the client). The
stack keeps the tool prompt as `./benchmark.sh` does (`prompt_cache=true`): the first row is
its first request, a read from the kept copy, or a cold read (prefill at a growing context)
for a setting whose copy is not kept yet (kept in a folder of the run's own, seeded from the
shared one, so other KV types never push out the copy `./benchmark.sh` reads).

Several settings (`--settings "'';--flash-attn off"`) run side by side: one stack each, all up
at once, every scenario's requests sent to each in turn, so they meet the same prompts under
the same load; a last table gives each setting's figures as ratios to the first's, and whether
its forced calls chose the same tools.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents.options import LoopOptions
from agents.react import opening_messages, request_params
from bankbench.serve.engine_speed import TIMINGS_FILE, EngineTiming, read_timings

# The sweep's agent options (benchmark.sh): one forced call on the first turn, then free turns.
SWEEP_LOOP = LoopOptions(tool_choice="first", parallel_tool_calls=False, max_tokens=96,
                         max_steps=4)


class TimingsTail:
    """The worker's timings lines written since the last read."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / TIMINGS_FILE.format(index=0)
        self.seen = len(read_timings([self.path]))

    def new(self) -> list[EngineTiming]:
        rows = read_timings([self.path])
        fresh, self.seen = rows[self.seen:], len(rows)
        return fresh


def sweep_tasks(out: Path, limit: int) -> list[Path]:
    """The sample tasks `./benchmark.sh` runs where the hub is out of reach (labels from the
    sample's gold file: labels do not change a request)."""
    from tasks.banking.build import build_tasks
    from tasks.banking.sample import GOLD_GOALS_PATH

    build_tasks("sample", out, labels=f"file:{GOLD_GOALS_PATH}", limit=limit,
                log=lambda line: None)
    return sorted(p for p in out.iterdir() if (p / "task.toml").is_file())


def bank_reply(task: Path, tool: str, arguments: str) -> str:
    """What the task's mock bank answers to a call (its own reply code, stdlib only)."""
    env = str(task / "environment")
    sys.path.insert(0, env)
    try:
        import mockreplies

        responses = json.loads((task / "environment" / "responses.json").read_text())
        try:
            args = json.loads(arguments or "{}")
        except json.JSONDecodeError:
            args = {}
        return json.dumps(mockreplies.mock_response(tool, args, responses))
    finally:
        sys.path.remove(env)
        sys.modules.pop("mockreplies", None)
        sys.modules.pop("toolschema", None)


def first_turn(task: Path) -> tuple[list[dict], list[dict]]:
    tools = json.loads((task / "environment" / "tools.json").read_text())
    instruction = (task / "instruction.md").read_text()
    return opening_messages(instruction, tools, "native"), tools


Send = Callable[[dict[str, Any]], dict[str, Any]]


def scenario_rows(send: Send, tail: TimingsTail, task: Path, tokens: int) -> list[dict]:
    """The three requests of one scenario, each with its client figures and timings line."""
    messages, tools = first_turn(task)
    rows = []

    def one(kind: str, body: dict[str, Any]) -> dict[str, Any]:
        reply = send(body)
        lines = tail.new()
        row = {"kind": kind, "scenario": task.name, **reply,
               "timing": lines[-1] if lines else None}
        rows.append(row)
        return row

    guided = one("turn 1 guided",
                 {"messages": messages, **request_params(tools, SWEEP_LOOP, step=1)})
    free = {"messages": messages, **request_params(tools, SWEEP_LOOP, step=2)}
    one("turn 1 free", {**free, "max_tokens": tokens, "min_tokens": tokens})
    call = (guided.get("tool_calls") or [None])[0]
    if call is not None:
        history = messages + [
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call-1", "type": "function",
                 "function": {"name": call["name"], "arguments": call["arguments"]}}]},
            {"role": "tool", "tool_call_id": "call-1",
             "content": bank_reply(task, call["name"], call["arguments"])},
        ]
        one("turn 2", {"messages": history, **request_params(tools, SWEEP_LOOP, step=2)})
    return rows


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _fmt(value: float | None, spec: str) -> str:
    return "" if value is None else format(value, spec)


def breakdown_table(rows: list[dict]) -> list[str]:
    """One line per request kind: medians of its rows' parts (the worker's own timings)."""
    out = ["| request | n | context | new tokens | wait ms | prefill ms | prefill tok/s | "
           "decode tokens | decode ms/token | decode tok/s | worker ms | outside ms |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    kinds = list(dict.fromkeys(r["kind"] for r in rows))
    for kind in kinds:
        timed = [r for r in rows if r["kind"] == kind and r["timing"] is not None
                 and r["timing"].prefill_ms is not None]
        t = [r["timing"] for r in timed]
        if not t:
            out.append(f"| {kind} | 0 | | | | | | | | | | |")
            continue
        wait = [x.first_token_ms - x.prefill_ms for x in t if x.first_token_ms is not None]
        outside = [r["e2e_ms"] - r["timing"].worker_ms for r in timed
                   if r.get("e2e_ms") is not None]
        out.append(
            f"| {kind} | {len(t)} | {_fmt(_median([x.prompt_tokens for x in t]), '.0f')} | "
            f"{_fmt(_median([x.prefill_tokens for x in t]), '.0f')} | "
            f"{_fmt(_median(wait), '.0f')} | {_fmt(_median([x.prefill_ms for x in t]), '.0f')} | "
            f"{_fmt(_median([x.prefill_rate for x in t if x.prefill_rate]), '.0f')} | "
            f"{_fmt(_median([x.decode_tokens for x in t]), '.0f')} | "
            f"{_fmt(_median([x.decode_ms_per_token for x in t if x.decode_rate]), '.1f')} | "
            f"{_fmt(_median([x.decode_rate for x in t if x.decode_rate]), '.1f')} | "
            f"{_fmt(_median([x.worker_ms for x in t]), '.0f')} | {_fmt(_median(outside), '.0f')} |")
    return out


def grammar_cost(rows: list[dict]) -> str:
    """Decode ms per token with and without the grammar, same prompts, same engine."""
    def per_token(kind: str) -> float | None:
        return _median([r["timing"].decode_ms_per_token for r in rows
                        if r["kind"] == kind and r["timing"] is not None
                        and r["timing"].decode_rate])

    def wait(kind: str) -> float | None:
        return _median([r["timing"].first_token_ms - r["timing"].prefill_ms for r in rows
                        if r["kind"] == kind and r["timing"] is not None
                        and r["timing"].prefill_ms is not None
                        and r["timing"].first_token_ms is not None])

    g, f = per_token("turn 1 guided"), per_token("turn 1 free")
    gw, fw = wait("turn 1 guided"), wait("turn 1 free")
    if g is None or f is None:
        return "grammar: not measured (no timed guided and free pair)"
    wait_part = "" if gw is None or fw is None else f"; set-up before the first token " \
        f"{gw:.0f} ms guided vs {fw:.0f} ms free"
    return (f"grammar: decode {g:.1f} ms/token guided vs {f:.1f} ms/token free "
            f"({g / f:.2f}×){wait_part}")


def first_request(send: Send, tail: TimingsTail, task: Path) -> dict:
    """The tool prompt's first request on a fresh stack: its kept copy, or a cold read."""
    messages, tools = first_turn(task)
    send({"messages": messages, "tools": tools, "tool_choice": "auto", "max_tokens": 1})
    cold = tail.new()
    row = {"kind": "tool prompt, first", "scenario": task.name, "e2e_ms": 0.0,
           "timing": cold[-1] if cold else None}
    if row["timing"] is not None:
        row["e2e_ms"] = row["timing"].worker_ms
    return row


def _median_of(rows: list[dict], kind: str, field: str) -> float | None:
    return _median([getattr(r["timing"], field) for r in rows
                    if r["kind"] == kind and r["timing"] is not None
                    and getattr(r["timing"], field)])


def ratio_table(settings: list[str], results: list[list[dict]]) -> list[str]:
    """Each setting against the first, per request kind: decode ms per token and prefill
    tokens/s (medians over the same prompts, sent in turn to every setting's stack), the
    worker's wall and CPU time per scenario (CPU time holds its ratio on a busy host, wall time
    does not), and whether the forced calls chose the same tools."""
    out = ["| setting | guided decode ms/token | × first | free decode ms/token | × first | "
           "turn 2 prefill tok/s | × first | worker ms per scenario | × first | "
           "worker CPU s per scenario | × first | free turn CPU ms/token | × first | same calls |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def calls(rows: list[dict]) -> list[str]:
        return [" ".join(c["name"] for c in r.get("tool_calls") or []) for r in rows
                if r["kind"] == "turn 1 guided"]

    def worker(rows: list[dict]) -> float | None:
        timed = [r["timing"].worker_ms for r in rows if r["kind"] != "tool prompt, first"
                 and r["timing"] is not None]
        scenarios = {r["scenario"] for r in rows if r["kind"] == "turn 1 guided"}
        return sum(timed) / len(scenarios) if timed and scenarios else None

    def cpu(rows: list[dict]) -> float | None:
        used = [r["cpu_s"] for r in rows if r["kind"] != "tool prompt, first" and "cpu_s" in r]
        scenarios = {r["scenario"] for r in rows if r["kind"] == "turn 1 guided"}
        return sum(used) / len(scenarios) if used and scenarios else None

    def free_cpu(rows: list[dict]) -> float | None:
        return _median([r["cpu_s"] * 1e3 / r["timing"].decode_tokens for r in rows
                        if r["kind"] == "turn 1 free" and "cpu_s" in r
                        and r["timing"] is not None and r["timing"].decode_tokens])

    def figures(rows: list[dict]) -> tuple[float | None, ...]:
        return (_median_of(rows, "turn 1 guided", "decode_ms_per_token"),
                _median_of(rows, "turn 1 free", "decode_ms_per_token"),
                _median_of(rows, "turn 2", "prefill_rate"), worker(rows), cpu(rows),
                free_cpu(rows))

    base = figures(results[0])
    first = results[0]
    for setting, rows in zip(settings, results, strict=True):
        cells = []
        for value, ref, spec in zip(figures(rows), base, (".1f", ".1f", ".0f", ".0f", ".1f", ".1f"),
                                    strict=True):
            ratio = f"{value / ref:.2f}" if value and ref else ""
            cells += [_fmt(value, spec), ratio]
        same = "yes" if calls(rows) == calls(first) else \
            f"no: {', '.join(calls(rows))} vs {', '.join(calls(first))}"
        out.append(f"| {setting or '(defaults)'} | {' | '.join(cells)} | {same} |")
    return out


def sweep_rows(sweep_dir: Path) -> list[dict]:
    """A finished sweep's requests as the worker timed them (`<sweep>/server/`), each under
    its level (by the time it ended) and whether a grammar guided it; no client times."""
    from datetime import datetime

    from bankbench.serve.engine_speed import stack_timings

    records = json.loads((sweep_dir / "sweep.json").read_text())["level_records"]
    spans = [(r["level"], datetime.fromisoformat(r["started_at"]).timestamp(),
              datetime.fromisoformat(r["finished_at"]).timestamp())
             for r in records if r.get("started_at") and r.get("finished_at")]
    rows = []
    for timing in stack_timings(sweep_dir / "server"):
        level = next((c for c, start, end in spans if start <= timing.end_unix_s <= end + 1),
                     None)
        if level is None:
            continue  # the stack's warm-up, or a level that did not finish
        if (timing.decode_tokens or 0) <= 1:
            kind = f"level {level}, 1-token probe"  # a readiness check, not an agent turn
        else:
            kind = f"level {level}, {'guided' if timing.guided else 'free'}"
        rows.append({"kind": kind, "e2e_ms": None, "timing": timing})
    return sorted(rows, key=lambda r: r["kind"])


def run(stream: Callable[..., dict], settings: list[str], limit: int, rounds: int,
        tokens: int, prompt_folder: Path | None = None) -> None:
    """One stack per setting, all up at once; every scenario's requests go to each stack in
    turn, so the settings meet the same prompts under the same load (ratios hold on a busy
    host)."""
    from concurrent.futures import ThreadPoolExecutor
    from contextlib import ExitStack

    from bankbench.serve import api

    with tempfile.TemporaryDirectory(prefix="bankbench-engine-") as tmp, ExitStack() as stacks:
        tasks = sweep_tasks(Path(tmp) / "tasks", limit)
        kept = prompt_folder or _private_prompt_cache(Path(tmp) / "prompts")
        kept.mkdir(parents=True, exist_ok=True)
        states, tails = [], []
        for i, worker_args in enumerate(settings):
            started = time.perf_counter()
            # room for every entry already there and one per setting: none pushed out
            keep = len(list(kept.glob("*.json"))) + len(settings) + 1
            options = {"worker_args": f"{worker_args} --prompt-cache-dir {kept} "
                                      f"--prompt-cache-keep {keep}"}
            state = stacks.enter_context(api.running(
                "cpu-tiny", options=options, state_dir=Path(tmp) / f"stack-{i}"))
            print(f"worker args {worker_args or '(defaults)'}: stack up in "
                  f"{time.perf_counter() - started:.1f} s", flush=True)
            states.append(state)
            tails.append(TimingsTail(state.state_dir))
        # The first requests side by side: a setting whose copy is not kept yet reads the tool
        # prompt cold, minutes on a busy host; nothing is compared on them.
        with ThreadPoolExecutor(len(states)) as pool:
            firsts = pool.map(lambda st: first_request(_sender(stream, st[0]), st[1], tasks[0]),
                              zip(states, tails, strict=True))
            results = [[row] for row in firsts]
        for _ in range(rounds):
            for task in tasks:
                for state, tail, rows in zip(states, tails, results, strict=True):
                    rows += scenario_rows(_sender(stream, state), tail, task, tokens)
        for worker_args, rows in zip(settings, results, strict=True):
            print(f"\n### worker args: {worker_args or '(defaults)'}")
            for line in breakdown_table(rows):
                print(line)
            print(grammar_cost(rows), flush=True)
        if len(settings) > 1:
            print("\n### each setting against the first (same prompts, same time)")
            for line in ratio_table(settings, results):
                print(line)


def _private_prompt_cache(folder: Path) -> Path:
    """A kept-prompt folder for this run, seeded with links to the shared one's entries: the
    settings' own entries (other KV types) must not push out the ones `./benchmark.sh` reads."""
    from bankbench.serve.cpu_tiny import prompt_cache_dir

    folder.mkdir(parents=True)
    shared = prompt_cache_dir()
    for entry in shared.iterdir() if shared.is_dir() else []:
        if entry.is_file():
            (folder / entry.name).symlink_to(entry)
    return folder


def _sender(stream: Callable[..., dict], state: Any) -> Send:
    """Sends to the stack's frontend; each reply also carries the CPU seconds the worker
    process used meanwhile (`cpu_s`): the engine's work, which other work on the host does not
    inflate as it does wall time."""
    import psutil

    worker = next(psutil.Process(c.pid) for c in state.components
                  if c.name.startswith("worker") and c.pid)

    def cpu() -> float:
        times = worker.cpu_times()
        return times.user + times.system

    def send(body: dict[str, Any]) -> dict[str, Any]:
        before = cpu()
        reply = stream(state.base_url, state.model, body)
        return {**reply, "cpu_s": cpu() - before}

    return send
