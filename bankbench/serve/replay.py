"""Scripted mocker outputs: write a Dynamo mocker response-replay trace from texts.

The mocker (`--response-replay-trace-path`) reads JSONL lines
`{"session_id", "output_length", "output_token_ids"}`. Lines of one session are its turns in
file order. A request selects turn k of session S with

    {"nvext": {"annotations": ["output_replay_id:S:k"]}}

where k counts from 0 (checked against ai-dynamo 1.6.1: `S:0` is the first line of S). The
mocker then streams exactly those token ids and stops with finish_reason "length" (its stop
is the scripted length, not an EOS token), even when the frontend parsed a tool call from
them. A request whose id is not in the trace (unknown session, or k past the last turn) gets
ordinary random mocker tokens — no error — so tests should assert on the content they expect.

For the frontend to turn `<tool_call>…</tool_call>` text into `tool_calls` deltas, the stack
must run with a tool-call parser on the model card (`hermes`, the cpu-mocker default) and the
request must pass `tools`.

A sweep (or capacity search) that starts a cpu-mocker stack itself scripts it this way unless
told otherwise (`scripted_sweep_config`): each scenario's session is its oracle's calls, one
per turn, then an answer, and the agent selects turn k with its k-th request. The mock model
then makes decisions (the same every repeat), so the decision half of a capacity search has
something to compare; the scripted calls are the tasks' expected tools, so their TSQ is 1 by
construction: it exercises the pipeline, not a model.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from contracts.expected import read_expected
from contracts.sweep import SweepConfig
from contracts.tools import TOOLS_FILE, read_tools

SCRIPTED_PROFILE = "cpu-mocker"
SCRIPT_FILE = "mocker_replies.jsonl"
# The agent's annotation that picks its k-th request's scripted turn (fields of agents/options).
SCRIPT_ANNOTATION = "output_replay_id:{scenario_id}:{request_index}"
ANSWER = "Done: every request has been handled."
ANSWERS = 3  # answers after the calls, for an agent that takes a step or two more


class ReplayLine(BaseModel):
    """One scripted turn as the mocker reads it."""

    session_id: str
    output_length: int
    output_token_ids: list[int]


def tool_call_text(name: str, arguments: dict) -> str:
    """The hermes-style text the frontend's `hermes` parser turns into one tool call."""
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def write_trace(
    path: Path, sessions: dict[str, list[str]], tokenizer_json: Path | None = None
) -> Path:
    """Tokenize each session's scripted outputs and write the replay trace to `path`.

    `sessions` maps a session id to its turns' output texts, in turn order. The texts are
    tokenized with the mock model's tokenizer (SmolLM2's, from `smollm2.model_dir()`, unless
    `tokenizer_json` names another), without special tokens.
    """
    from tokenizers import Tokenizer

    if tokenizer_json is None:
        from bankbench.serve.smollm2 import model_dir

        tokenizer_json = model_dir() / "tokenizer.json"
    tok = Tokenizer.from_file(str(tokenizer_json))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for session_id, turns in sessions.items():
        if ":" in session_id:
            raise ValueError(f"replay session id {session_id!r} must not contain ':'")
        for text in turns:
            ids = tok.encode(text, add_special_tokens=False).ids
            if not ids:
                raise ValueError(f"session {session_id!r} has an empty scripted turn")
            line = ReplayLine(session_id=session_id, output_length=len(ids), output_token_ids=ids)
            lines.append(line.model_dump_json())
    path.write_text("\n".join(lines) + "\n")
    return path


def replay_annotation(session_id: str, turn: int) -> dict:
    """The `nvext` body fragment that selects turn `turn` (0-based) of `session_id`."""
    return {"annotations": [f"output_replay_id:{session_id}:{turn}"]}


def oracle_calls(task_dir: Path) -> list[tuple[str, dict]]:
    """(tool, schema-valid arguments) for each expected tool of a built task, in goal order."""
    from tasks.banking.arguments import arguments_for

    task_dir = Path(task_dir)
    expected = read_expected(task_dir).expected_tools
    schemas = {tool.function.name: tool.function.parameters
               for tool in read_tools(task_dir / "environment" / TOOLS_FILE)}
    return [(name, arguments_for(schemas[name].get("properties") or {},
                                 schemas[name].get("required") or [])) for name in expected]


def oracle_sessions(tasks_dir: Path) -> dict[str, list[str]]:
    """Scenario id → its scripted turns: one oracle call per turn, then answers."""
    tasks = sorted(p.parent for p in Path(tasks_dir).glob("*/task.toml"))
    return {task.name: [*(tool_call_text(name, args) for name, args in oracle_calls(task)),
                        *[ANSWER] * ANSWERS] for task in tasks}


def scripted_sweep_config(config: SweepConfig, sweep_dir: Path,
                          tasks_dir: Path | None = None) -> SweepConfig:
    """The config of a sweep whose own cpu-mocker stack is scripted to call the tasks' oracle
    tools: the replay trace `<sweep>/mocker_replies.jsonl` (written from `tasks_dir` when given)
    and the agent's annotation that selects it. Without `tasks_dir` (a resume, before its
    check) only a sweep that was scripted when it began (its trace is there) is. Unchanged for
    another profile, a stack given its own `replay_trace`, an agent given its own
    `nvext_annotations`, or `--set scripted=false`."""
    from bankbench.serve.options import MockerOptions, validate_options

    options = dict(config.server_options)
    trace = Path(sweep_dir).resolve() / SCRIPT_FILE
    if (config.profile != SCRIPTED_PROFILE or "replay_trace" in options
            or "nvext_annotations" in config.agent_kwargs
            or not validate_options(MockerOptions, options, SCRIPTED_PROFILE).scripted):
        return config
    if tasks_dir is not None:
        write_trace(trace, oracle_sessions(tasks_dir))
    elif not trace.is_file():
        return config  # a sweep begun before scripting, or unscripted: resumed as it was
    return config.model_copy(update={
        "server_options": {**options, "replay_trace": str(trace)},
        "agent_kwargs": {**config.agent_kwargs, "nvext_annotations": SCRIPT_ANNOTATION}})
