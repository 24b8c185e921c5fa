"""Dataset -> one Harbor task directory per scenario: the adapter's entry point.

`build_tasks` validates everything (rows, selection, labels, template) before it writes a
single file, then writes each task atomically; tasks whose files are unchanged are left alone,
so rebuilding is idempotent. Task dirs of scenarios the dataset no longer holds are reported as
stale (and removed only with prune_stale=True).
"""

from __future__ import annotations

import re
import shutil
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from contracts.conversation import CUSTOMER_FILE, DEFAULT_MAX_TURNS
from contracts.expected import Expected, LabelsInfo, Provenance
from contracts.task import (
    CONVERSATION_MODE,
    DATASET_ID,
    DEFAULT_MODE,
    INSTRUCTION_MODES,
    InstructionMode,
    TaskMetadata,
)
from tasks.banking import goldperfect, render
from tasks.banking.arguments import arguments_for
from tasks.banking.dataset import BadRow, Dataset, DatasetError, OnBadRow, Scenario, load
from tasks.banking.labels import (
    DEFAULT_METHOD,
    LabelSet,
    ScenarioLabels,
    label_scenarios,
)
from tasks.banking.labels.llm import ModelOptions
from tasks.banking.labels.methods import method_of
from tasks.banking.writer import TaskFiles, task_dirs, write_task

TEMPLATE_DIR = Path(__file__).resolve().parent / "template"
# Files taken verbatim from the template (the mock bank and the verifier), with their modes.
TEMPLATE_FILES = {
    "environment/Dockerfile": 0o644,
    "environment/bank": 0o755,
    "environment/entrypoint.sh": 0o755,
    "environment/bankd.py": 0o644,
    "environment/mockbank.py": 0o644,
    "environment/mockreplies.py": 0o644,
    "environment/intentlog.py": 0o644,
    "environment/convlog.py": 0o644,
    "environment/convread.py": 0o644,
    "environment/customer.py": 0o644,
    "environment/customer_llm.py": 0o644,
    "environment/toolschema.py": 0o644,
    "tests/test.sh": 0o755,
    "tests/verify.py": 0o644,
    "tests/scoring.py": 0o644,
    "tests/transcript.py": 0o644,
}
# One source, shipped twice: the bank validates calls with it, the verifier re-validates them;
# the bank and the verifier read the conversation log by one rule.
SHIPPED_TWICE = {"environment/toolschema.py": "tests/toolschema.py",
                 "environment/convread.py": "tests/convread.py"}


class BuildSummary(BaseModel):
    out: str
    source: str
    domain: str
    mode: str
    max_turns: int | None = Field(None, description="Conversation mode: the turn limit.")
    labels: str = Field(description="'<method>@<version>' used for every task.")
    dataset_revision: str
    scenario_ids: list[str] = Field(description="Tasks written (or confirmed unchanged).")
    tasks_written: int
    tasks_changed: int
    tasks_unchanged: int
    skipped_rows: list[BadRow] = Field(description="Bad rows left out (--on-bad-row skip).")
    stale: list[str] = Field(description="Task dirs under out whose scenario no longer exists.")
    pruned: list[str] = Field(default_factory=list, description="Stale dirs removed.")
    not_rebuilt: list[str] = Field(
        default_factory=list, description="Valid scenarios with task dirs left as they were."
    )

    def lines(self) -> list[str]:
        """Human summary, one fact per line."""
        out = [
            f"{self.tasks_written} tasks in {self.out} ({self.tasks_changed} changed, "
            f"{self.tasks_unchanged} unchanged); labels {self.labels}; mode {self.mode}"
            + (f" (at most {self.max_turns} turns)" if self.max_turns else "") + "; "
            f"dataset {self.source} @ {self.dataset_revision}",
        ]
        if self.skipped_rows:
            out.append(f"skipped {len(self.skipped_rows)} bad row(s):")
            out += [f"  {bad.line()}" for bad in self.skipped_rows]
        if self.stale:
            verb = "removed" if self.pruned else "left in place (--prune-stale removes them)"
            out.append(f"{len(self.stale)} stale task dir(s) {verb}: {', '.join(self.stale)}")
        if self.not_rebuilt:
            out.append(f"{len(self.not_rebuilt)} other task dir(s) not rebuilt this run")
        return out


def builder_tag() -> str:
    try:
        return f"bankbench {version('bankbench')}"
    except PackageNotFoundError:
        return "bankbench (unversioned)"


def select(dataset: Dataset, scenario_ids: list[str] | None, limit: int | None) -> list[Scenario]:
    chosen = dataset.scenarios
    if scenario_ids:
        by_id = {s.scenario_id: s for s in dataset.scenarios}
        bad = {b.row_id for b in dataset.bad_rows}
        unknown = [sid for sid in scenario_ids if sid not in by_id and sid not in bad]
        skipped = [sid for sid in scenario_ids if sid in bad]
        if unknown:
            raise DatasetError(
                f"--scenarios: unknown {', '.join(unknown)} "
                f"({dataset.domain}-000 … {dataset.domain}-{dataset.n_scenario_rows - 1:03d})"
            )
        if skipped:
            raise DatasetError(f"--scenarios: {', '.join(skipped)} are bad rows (see above)")
        chosen = [by_id[sid] for sid in dict.fromkeys(scenario_ids)]
    if limit is not None:
        if limit < 1:
            raise DatasetError(f"--limit {limit}: must be at least 1")
        chosen = chosen[:limit]
    return chosen


def template_files(template_dir: Path) -> dict[str, tuple[bytes, int]]:
    missing = [rel for rel in TEMPLATE_FILES if not (template_dir / rel).is_file()]
    if missing:
        raise DatasetError(
            f"task template incomplete: missing {', '.join(str(template_dir / m) for m in missing)}"
        )
    files = {rel: ((template_dir / rel).read_bytes(), mode) for rel, mode in TEMPLATE_FILES.items()}
    for source, copy in SHIPPED_TWICE.items():
        files[copy] = files[source]
    return files


def tools_named_in(text: str, names: list[str]) -> list[str]:
    """Tool names that appear as whole words in text."""
    edge = "A-Za-z0-9_"
    return [n for n in names if re.search(rf"(?<![{edge}]){re.escape(n)}(?![{edge}])", text)]


def oracle_calls(
    scenario: Scenario, labels: ScenarioLabels, dataset: Dataset
) -> list[tuple[str, dict[str, Any]]]:
    """One call per expected tool; enum choices guided by the goal that asked for the tool."""
    goals = scenario.row.user_goals
    hint_for: dict[str, str] = {}
    for goal in labels.goals:
        for tool in goal.tools or []:
            hint_for.setdefault(tool, goal.text)
    tools = {tool.title: tool for tool in dataset.tools}
    calls = []
    for name in labels.expected_tools:
        tool = tools[name]
        hint = hint_for.get(name, " ".join(goals))
        calls.append((name, arguments_for(tool.parameters, tool.required, hint)))
    return calls


def task_files(
    scenario: Scenario,
    dataset: Dataset,
    labelset: LabelSet,
    mode: InstructionMode,
    template: dict[str, tuple[bytes, int]],
    shared: dict[str, bytes],
    max_turns: int = DEFAULT_MAX_TURNS,
    gold: goldperfect.Gold | None = None,
) -> TaskFiles:
    labels = labelset.scenarios[scenario.scenario_id]
    goals = scenario.row.user_goals
    expected = Expected(
        scenario_id=scenario.scenario_id,
        labels=LabelsInfo(method=labelset.method, version=labelset.version,
                          source=labelset.source, produced_by=labelset.produced_by,
                          quality=labelset.quality),
        expected_tools=labels.expected_tools,
        goals=labels.goals,
        provenance=Provenance(dataset_revision=dataset.revision, builder=builder_tag()),
    )
    # Only from this dataset's own gold; without it the figure is "not measured".
    expected.gold_perfect = goldperfect.for_task(gold, expected)
    meta = TaskMetadata(
        scenario_id=scenario.scenario_id,
        domain=dataset.domain,
        persona_index=scenario.row.persona_index,
        n_goals=len(goals),
        labels=labelset.tag,
        dataset_revision=dataset.revision,
        mode=mode,
        dataset=DATASET_ID,
        builder=builder_tag(),
        max_turns=max_turns if mode == CONVERSATION_MODE else None,
    )
    calls = oracle_calls(scenario, labels, dataset)
    talking = mode == CONVERSATION_MODE
    text = {
        "task.toml": render.task_toml(meta),
        "instruction.md": render.instruction_md(scenario, mode),
        "tests/expected.json": render.expected_json(expected),
        "solution/solve.sh": render.solve_sh(scenario.scenario_id, labelset.tag, calls,
                                             len(goals) if talking else None),
    }
    if talking:
        # The customer's brief, for the bank service only (entrypoint.sh makes it root's,
        # 0600); tests/conversation.json tells the verifier the task is a conversation.
        text[f"environment/{CUSTOMER_FILE}"] = render.customer_json(scenario, max_turns)
        text["tests/conversation.json"] = render.dumps({"mode": mode, "max_turns": max_turns})
    files: TaskFiles = {rel: (body.encode(), 0o644) for rel, body in text.items()}
    files["solution/solve.sh"] = (files["solution/solve.sh"][0], 0o755)
    files.update({rel: (data, 0o644) for rel, data in shared.items()})
    files.update(template)
    return files


@contextmanager
def _said_if_slow(say: Callable[[str], None], line: str, slow: bool,
                  after_s: float = 2.0) -> Iterator[None]:
    """For a `slow` step, say `line` once it has taken `after_s` (a download, a sentence
    encoder, a model can take minutes on a busy machine); a quick step says nothing."""
    if not slow:
        yield
        return
    timer = threading.Timer(after_s, say, args=(line,))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def build_tasks(
    source: str,
    out: Path,
    domain: str = "banking",
    mode: str = DEFAULT_MODE,
    labels: str = DEFAULT_METHOD,
    on_bad_row: OnBadRow = "fail",
    limit: int | None = None,
    *,
    scenarios: list[str] | None = None,
    offline: bool = False,
    hub_cache: Path | None = None,
    prune_stale: bool = False,
    template_dir: Path = TEMPLATE_DIR,
    progress_every: int = 10,
    log: Callable[[str], None] | None = None,
    model_options: ModelOptions | None = None,
    max_turns: int = DEFAULT_MAX_TURNS,
) -> BuildSummary:
    """Build one task per selected scenario under `out`; see the module docstring.

    `model_options` is where `labels="model"` asks and where its labels file goes;
    `max_turns` is the conversation mode's turn limit (other modes ignore it).
    """
    say = log or (lambda line: print(line, file=sys.stderr, flush=True))
    if mode not in INSTRUCTION_MODES:
        raise DatasetError(f"--mode {mode!r}: expected one of {', '.join(INSTRUCTION_MODES)}")
    if not 1 <= max_turns <= 100:
        raise DatasetError(f"--max-turns {max_turns}: must be between 1 and 100")
    # Only the steps that can take minutes are announced (a download; an encoder or a model
    # labelling): a local file's quick error stays the one line it is.
    slow_read = source in ("hf", "auto")
    with _said_if_slow(say, f"downloading the {domain} dataset ({source}) ...", slow_read):
        dataset = load(source, domain, on_bad_row=on_bad_row, offline=offline,
                       hub_cache=hub_cache)
    for bad in dataset.bad_rows:
        say(f"skipping bad row {bad.line()}")
    chosen = select(dataset, scenarios, limit)
    slow_labels = method_of(labels)[0].slow
    with _said_if_slow(say, f"labelling {len(chosen)} scenarios ({labels}) ...", slow_labels):
        labelset = label_scenarios(labels, dataset, chosen, model_options)
    gold = goldperfect.gold_for(dataset)
    template = template_files(template_dir)
    tools_json = render.tools_json(dataset.tools).encode()
    shared = {
        "environment/tools.json": tools_json,
        "tests/tools.json": tools_json,  # what the verifier checks arguments against
        "environment/responses.json": render.responses_json(dataset.tools).encode(),
    }
    # Render everything first: a problem in any task stops the build before a file is written.
    rendered = [
        (s.scenario_id, task_files(s, dataset, labelset, mode, template, shared, max_turns,
                                   gold))
        for s in chosen
    ]
    for sid, files in rendered:
        named = tools_named_in(files["instruction.md"][0].decode(), dataset.tool_names)
        if named:
            # Only the dataset's own text can do this; say so rather than silently edit it.
            say(f"warning: {sid}: the customer's text names tool(s) {', '.join(named)}")

    out.mkdir(parents=True, exist_ok=True)
    changed = 0
    for n, (sid, files) in enumerate(rendered, start=1):
        changed += write_task(out / sid, files)
        if n % max(progress_every, 1) == 0 or n == len(rendered):
            say(f"[{n}/{len(rendered)}] tasks written ({changed} changed) in {out}")

    valid = {s.scenario_id for s in dataset.scenarios}
    built = {sid for sid, _ in rendered}
    existing = [p for p in task_dirs(out, domain) if p.name not in built]
    stale = [p for p in existing if p.name not in valid]
    pruned = []
    if prune_stale:
        for path in stale:
            shutil.rmtree(path)
            pruned.append(path.name)
    summary = BuildSummary(
        out=str(out),
        source=source,
        domain=domain,
        mode=mode,
        max_turns=max_turns if mode == CONVERSATION_MODE else None,
        labels=labelset.tag,
        dataset_revision=dataset.revision,
        scenario_ids=[sid for sid, _ in rendered],
        tasks_written=len(rendered),
        tasks_changed=changed,
        tasks_unchanged=len(rendered) - changed,
        skipped_rows=dataset.bad_rows,
        stale=[p.name for p in stale],
        pruned=pruned,
        not_rebuilt=[p.name for p in existing if p.name in valid],
    )
    for line in summary.lines():
        say(line)
    return summary
