"""The stored judge prompt and the messages built from one trial.

The prompt text is a file (`prompts/<version>.md`) so a change to it is a reviewed diff; its
version (the file name) and SHA-256 go into every verdict, so figures from two prompt texts
are never silently mixed. `session-v2` scores action completion with partial credit,
`session-v2-strict` all or nothing (as Galileo's session success is); both read the whole
conversation in conversation mode. `session-v1` (partial credit, written before the judge saw
the middle turns) is kept so its verdicts stay readable.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from analysis.trial_inputs import BankCall, TrialInputs

PROMPTS = Path(__file__).resolve().parent / "prompts"
DEFAULT_VERSION = "session-v2"
STRICT_VERSION = "session-v2-strict"  # action completion all or nothing
MAX_OBSERVATION_CHARS = 1500


@dataclass(frozen=True)
class Prompt:
    version: str
    text: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


def load_prompt(version: str = DEFAULT_VERSION) -> Prompt:
    path = PROMPTS / f"{version}.md"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in PROMPTS.glob("*.md")))
        raise ValueError(f"judge prompt {version!r} not found (known: {known})")
    return Prompt(version=version, text=path.read_text(encoding="utf-8"))


def _clip(text: str | None) -> str:
    text = text or ""
    return text if len(text) <= MAX_OBSERVATION_CHARS else text[:MAX_OBSERVATION_CHARS] + " …"


def _call_line(call: BankCall, observation: str | None) -> list[str]:
    verdict = "accepted" if call.valid else "rejected by the bank"
    line = [f"call {call.tool} {json.dumps(call.arguments, sort_keys=True)} ({verdict})"]
    return line + ([f"result: {_clip(observation)}"] if observation is not None else [])


def conversation_lines(inputs: TrialInputs) -> list[str]:
    """Conversation mode: every customer and agent line of the scored attempt in order, each
    call placed after the customer line of the turn it was made on (calls of turn t come
    after the customer's answer to the agent's t-th message), with what the bank answered
    where the agent's trajectory shows it."""
    names = [t.tool for t in inputs.turns]
    observed = ([t.observation for t in inputs.turns]
                if names == [c.tool for c in inputs.calls] else [None] * len(inputs.calls))
    pending = list(zip(inputs.calls, observed, strict=True))
    parts: list[str] = []

    def calls_of(turn: int) -> None:
        for call, observation in [p for p in pending if p[0].turn == turn]:
            parts.extend(_call_line(call, observation))
            pending.remove((call, observation))

    for line in inputs.dialogue:
        parts.append(f"{line.speaker} (turn {line.turn}): {line.text}")
        if line.speaker == "customer":
            calls_of(line.turn)
    for call, observation in pending:  # made on a turn the log has no customer line for
        parts.extend(_call_line(call, observation))
    return parts


def session_text(inputs: TrialInputs) -> str:
    """What the judge reads: the customer's goals, the tools there were, and the session —
    in conversation mode every customer and agent turn with the calls between them;
    otherwise the agent's calls with what the bank answered (its trajectory when it wrote
    one, else the bank's record of the scored attempt) and its final answer."""
    goals = ("\n".join(f"{n}. {g}" for n, g in enumerate(inputs.goal_texts, start=1))
             or "(none listed)")
    parts = ["Customer's message:", inputs.instruction or "(not recorded)", "",
             "Customer's goals:", goals, "",
             "Tools the assistant had: " + (", ".join(inputs.known_tools) or "(not recorded)"),
             "", "Session:"]
    if inputs.dialogue:
        parts += conversation_lines(inputs)
    elif inputs.turns:
        for turn in inputs.turns:
            if turn.text:
                parts.append(f"assistant: {turn.text}")
            parts.append(f"call {turn.tool} {json.dumps(turn.arguments, sort_keys=True)}")
            parts.append(f"result: {_clip(turn.observation) or '(none)'}")
    else:
        for call in inputs.calls:
            parts.extend(_call_line(call, None))
        if not inputs.calls:
            parts.append("(no tool calls)")
    parts += ["", "Assistant's final answer:", inputs.final_answer or "(none recorded)"]
    return "\n".join(parts)


def messages(prompt: Prompt, inputs: TrialInputs) -> list[dict[str, str]]:
    return [{"role": "system", "content": prompt.text},
            {"role": "user", "content": session_text(inputs)}]
