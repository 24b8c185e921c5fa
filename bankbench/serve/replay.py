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
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel


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
