"""What one finished trial says about its tool calls, read once into `TrialInputs`: the one
reader of a trial's inputs that the judge, the exports and consistency take.

- Tool calls are the **bank's** record, never what the agent wrote about itself, and only
  the attempt the verifier scored: the verifier's `tsq.json` (`contracts.tsq.TsqDetails`)
  names that attempt and repeats its calls with the verifier's own re-check of their
  arguments. A trial the verifier never scored falls back to the bank's intents log
  (`contracts.intents.Intent`) and the verifier's rule for the attempt
  (`contracts.intents.scored_attempt`).
- Expected tools and goals come from the task's `tests/expected.json`
  (`contracts.expected.Expected`; the task folder as the reading layer found it), else from
  `tsq.json`, which repeats them.
- The customer's request is the task's `instruction.md`; the agent's words come from its
  ATIF trajectory (`analysis.trajectory`).
- In conversation mode, every customer and agent line of the scored attempt comes from the
  bank's conversation log (`dialogue`); each call carries the customer turn it was made on.

Missing or broken files add an `Issue` and leave the field empty; nothing here raises.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harbor.models.trial.paths import TrialPaths
from pydantic import BaseModel, Field

from analysis.files import Issue, read_tsq_details
from analysis.task_folder import find_task_dir, read_expected
from analysis.trajectory import Turn, conversation, read_trajectory, reply_counts_of
from contracts.conversation import CONVERSATION_FILE, ConversationEntry, read_conversation_log
from contracts.expected import Expected
from contracts.intents import INTENTS_FILE, Acceptance, Intent, scored_attempt
from contracts.tools import TOOLS_FILE, read_tools
from contracts.tsq import RecordedCall, TsqDetails

__all__ = ["BankCall", "Goal", "TrialInputs", "Turn", "intents_log", "read_scored_calls",
           "read_trial_inputs"]

# A folder of the bank's own beside Harbor's (not one of TrialPaths).
BANK_DIR = "bank"


def intents_places(trial_dir: Path) -> tuple[Path, ...]:
    """Where a trial may keep the bank's log, most trusted first: a copy the agent cannot
    write (verifier/ or bank/, as Harbor downloads them) before the agent's own log folder."""
    paths = TrialPaths(trial_dir)
    return tuple(folder / INTENTS_FILE for folder in (
        paths.verifier_dir, trial_dir / BANK_DIR, paths.artifacts_dir, paths.agent_dir))


class BankCall(BaseModel):
    """One call the bank recorded for the scored attempt."""

    seq: int | None = None
    turn: int = Field(0, description="Customer turn the call was made on (0 before the "
                      "first `bank say`, and always in single-turn tasks).")
    tool: str
    arguments: Any = None
    valid: bool = Field(False, description="The bank's verdict, which the agent saw.")
    schema_valid: bool | None = Field(
        None, description="The verifier's own re-check of the arguments against the tool's "
        "schema (tsq.json); None when the verifier did not score the trial.")


class Goal(BaseModel):
    """One of the customer's goals, as the task's labels (or the verifier's copy) give it."""

    text: str | None = None
    tools: list[str] | None = Field(
        None, description="Its alternative tools (any one serves it, first preferred); [] "
        "when no tool serves it; None when the labels do not map tools to goals, or their "
        "per-goal side is not the one expected_tools was made from.")


class TrialInputs(BaseModel):
    scenario_id: str
    instruction: str | None = None
    calls: list[BankCall] = Field(default_factory=list)
    scored_attempt: int | None = None
    expected_tools: list[str] = Field(default_factory=list)
    goals: list[Goal] = Field(default_factory=list, description="In goal order.")
    known_tools: list[str] = Field(default_factory=list, description="The task's tool names.")
    turns: list[Turn] = Field(default_factory=list)
    dialogue: list[ConversationEntry] = Field(
        default_factory=list, description="Conversation mode: the scored attempt's customer "
        "and agent lines in order (empty in single-turn modes).")
    final_answer: str | None = None
    agent_replies: int = Field(0, description="Agent (not evaluator) model replies in the "
                               "trajectory, every attempt.")
    unparsed_call_replies: int = Field(
        0, description="Of those, replies whose text still holds a `<tool_call>` tag: the "
        "server's tool parser did not turn it into a call (malformed).")

    @property
    def goal_texts(self) -> list[str]:
        return [goal.text for goal in self.goals if goal.text is not None]

    @property
    def served_alternatives(self) -> list[list[str]] | None:
        """Per goal a tool serves, in goal order, its alternatives; None when the labels do
        not map tools to goals (then `expected_tools` is all there is)."""
        if not self.goals or any(goal.tools is None for goal in self.goals):
            return None
        return [goal.tools for goal in self.goals if goal.tools]


def intents_log(trial_dir: Path) -> Path | None:
    """The bank's intents log of a trial: the one place that knows where it lies."""
    return next((path for path in intents_places(trial_dir) if path.is_file()), None)


def read_bank_log(path: Path, issues: list[Issue]) -> tuple[list[Intent], list[int]]:
    """Call lines and accepted attempt numbers; unreadable lines are counted as one issue."""
    calls: list[Intent] = []
    accepts: list[int] = []
    bad = 0
    try:
        lines = path.read_bytes().splitlines()
    except OSError as exc:
        issues.append(Issue(str(path), f"unreadable ({exc})"))
        return calls, accepts
    for raw in lines:
        if not raw.strip():
            continue
        try:
            if b'"accept"' in raw:
                accepted = Acceptance.model_validate_json(raw).accept
                if accepted < 1:
                    raise ValueError("an accept line names attempt 1 or later")
                accepts.append(accepted)
            else:
                calls.append(Intent.model_validate_json(raw))
        except (ValueError, RecursionError):  # ValidationError is a ValueError
            bad += 1
    if bad:
        issues.append(Issue(str(path), f"{bad} unreadable line(s) skipped"))
    return calls, accepts


def _from_intent(intent: Intent) -> BankCall:
    return BankCall(seq=intent.seq, turn=intent.turn, tool=intent.tool,
                    arguments=intent.arguments, valid=intent.valid)


def _from_recorded(call: RecordedCall) -> BankCall:
    return BankCall(seq=call.seq if isinstance(call.seq, int) else None, turn=call.turn,
                    tool=call.tool, arguments=call.arguments,
                    valid=call.valid if call.bank_valid is None else call.bank_valid,
                    schema_valid=call.valid)


def _by_seq(calls: list[BankCall]) -> list[BankCall]:
    return sorted(calls, key=lambda c: c.seq if c.seq is not None else 0)


def read_scored_calls(trial_dir: Path, issues: list[Issue]
                      ) -> tuple[TsqDetails | None, int | None, list[BankCall]]:
    """(the verifier's tsq.json, the scored attempt, its calls as the bank recorded them):
    the verifier's copy of the scored attempt's calls, else (a trial it never scored, or a
    tsq.json trimmed of its `attempts`) the bank's log."""
    tsq = read_tsq_details(trial_dir, issues)
    attempt = tsq.scored_attempt if tsq is not None else None
    chosen = next((a for a in tsq.attempts if a.attempt == attempt), None) if tsq else None
    if chosen is not None:
        return tsq, attempt, _by_seq([_from_recorded(c) for c in chosen.calls])
    log = intents_log(trial_dir)
    if log is None:
        return tsq, attempt, []
    intents, accepts = read_bank_log(log, issues)
    if attempt is None:
        attempt = scored_attempt(accepts, (i.attempt for i in intents))
    return tsq, attempt, _by_seq([_from_intent(i) for i in intents if i.attempt == attempt])


def read_dialogue(trial_dir: Path, attempt: int | None, issues: list[Issue]
                  ) -> list[ConversationEntry]:
    """The scored attempt's lines of the bank's conversation log, in `seq` order; none when
    the task was no conversation (no log). Unreadable lines are counted as one issue."""
    path = TrialPaths(trial_dir).agent_dir / CONVERSATION_FILE
    if not path.is_file():
        return []
    try:
        lines, bad = read_conversation_log(path.read_bytes())
    except OSError as exc:
        issues.append(Issue(str(path), f"unreadable ({exc})"))
        return []
    if bad:
        issues.append(Issue(str(path), f"{bad} unreadable line(s) skipped"))
    return sorted((e for e in lines if attempt is None or e.attempt == attempt),
                  key=lambda e: e.seq)


def _expected(expected: Expected | None, tsq: TsqDetails | None, trial_dir: Path,
              issues: list[Issue]) -> tuple[list[str], list[Goal]]:
    """(expected tools, goals): the task's labels, else the verifier's copy of them."""
    goals: list[Goal] = []
    tools: list[str] = []
    if expected is not None:
        tools, goals = expected.expected_tools, [Goal(text=g.text, tools=g.tools)
                                                 for g in expected.goals]
    elif tsq is not None:
        tools, goals = tsq.expected_tools, [Goal(text=g.text, tools=g.tools) for g in tsq.goals]
    served = [goal.tools[0] for goal in goals if goal.tools]
    if any(goal.tools is None for goal in goals) or served != tools:
        # not the per-goal side of expected_tools: trust expected_tools alone
        goals = [Goal(text=goal.text) for goal in goals]
    if not tools and not any(goal.text is not None for goal in goals):
        issues.append(Issue(str(trial_dir), "no expected tools found (no task expected.json, "
                                            "no verifier tsq.json)"))
    return list(tools), goals


def _known_tools(task: Path | None, issues: list[Issue]) -> list[str]:
    path = task / "environment" / TOOLS_FILE if task is not None else None
    if path is None or not path.is_file():
        return []
    try:
        return [tool.function.name for tool in read_tools(path)]
    except ValueError as exc:
        issues.append(Issue(str(path), str(exc).removeprefix(f"{path}: ")))
        return []


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def read_trial_inputs(trial_dir: Path, scenario_id: str, issues: list[Issue],
                      task_dir: Path | None = None) -> TrialInputs:
    """Everything above for one trial. `task_dir` is the task folder the reading layer found
    for it (`Tables.task_dir`); without one (a trial read on its own) it is looked up here."""
    tsq, attempt, calls = read_scored_calls(trial_dir, issues)
    task = task_dir if task_dir is not None else find_task_dir(trial_dir, scenario_id)
    expected_tools, goals = _expected(read_expected(task, issues), tsq, trial_dir, issues)
    trajectory = read_trajectory(trial_dir, issues)
    user, turns, final = conversation(trajectory, attempt)
    instruction = (_read_text(task / "instruction.md") if task else None) or user
    return TrialInputs(
        scenario_id=scenario_id, instruction=instruction, calls=calls, scored_attempt=attempt,
        expected_tools=expected_tools, goals=goals,
        known_tools=_known_tools(task, issues),
        turns=turns, dialogue=read_dialogue(trial_dir, attempt, issues), final_answer=final,
        **reply_counts_of(trajectory),
    )
