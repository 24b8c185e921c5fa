"""The stored judge prompt and the messages built from one trial.

The prompt text is a file (`prompts/<version>.md`) so a change to it is a reviewed diff; its
version (the file name) and SHA-256 go into every verdict, so figures from two prompt texts
are never silently mixed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from analysis.export.trial_inputs import TrialInputs

PROMPTS = Path(__file__).resolve().parent / "prompts"
DEFAULT_VERSION = "session-v1"
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


def session_text(inputs: TrialInputs) -> str:
    """What the judge reads: the customer's goals, the tools there were, and the session —
    the agent's calls with what the bank answered (its trajectory when it wrote one, else
    the bank's record of the scored attempt) and its final answer."""
    goals = "\n".join(f"{n}. {g}" for n, g in enumerate(inputs.goals, start=1)) or "(none listed)"
    parts = ["Customer's message:", inputs.instruction or "(not recorded)", "",
             "Customer's goals:", goals, "",
             "Tools the assistant had: " + (", ".join(inputs.known_tools) or "(not recorded)"),
             "", "Session:"]
    if inputs.turns:
        for turn in inputs.turns:
            if turn.text:
                parts.append(f"assistant: {turn.text}")
            parts.append(f"call {turn.tool} {json.dumps(turn.arguments, sort_keys=True)}")
            parts.append(f"result: {_clip(turn.observation) or '(none)'}")
    else:
        for call in inputs.calls:
            verdict = "accepted" if call.valid else "rejected by the bank"
            parts.append(f"call {call.tool} {json.dumps(call.arguments, sort_keys=True)} "
                         f"({verdict})")
        if not inputs.calls:
            parts.append("(no tool calls)")
    parts += ["", "Assistant's final answer:", inputs.final_answer or "(none recorded)"]
    return "\n".join(parts)


def messages(prompt: Prompt, inputs: TrialInputs) -> list[dict[str, str]]:
    return [{"role": "system", "content": prompt.text},
            {"role": "user", "content": session_text(inputs)}]
