"""Load one domain of the dataset from the hub, a local copy or the bundled sample, and validate it.

Sources (`--source`):
- `hf` or `hf@<revision>`: the three configs' Parquet files for the domain, fetched into the
  cache with huggingface_hub; the revision recorded is the resolved commit sha.
- a directory in the hub layout (`<config>/<domain>-*.parquet`, or `.jsonl`): recorded as
  `dir:<sha256-16 of the files read>`.
- `sample`: the original sample bundled in tasks/banking/sample (banking only).

Every row is validated on its own; bad rows are collected with their id and the caller decides
(fail before anything is written, or skip them and say so).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from tasks.banking import hub, sample
from tasks.banking.raw import CONFIGS, DOMAINS, DatasetError, RawDataset
from tasks.banking.rows import PersonaRow, ScenarioRow, ToolRow, describe_error

OnBadRow = Literal["fail", "skip"]


class BadRow(BaseModel):
    config: str
    row_id: str = Field(description="'banking-007', 'tools row 3 (get_x)', 'personas row 5'.")
    problem: str

    def line(self) -> str:
        return f"{self.row_id}: {self.problem}"


class Scenario(BaseModel):
    scenario_id: str
    index: int = Field(description="Row index in the domain's adaptive_tool_use split.")
    persona: PersonaRow
    row: ScenarioRow


class Dataset(BaseModel):
    domain: str
    revision: str
    origin: str
    tools: list[ToolRow]
    scenarios: list[Scenario]
    bad_rows: list[BadRow] = Field(default_factory=list)
    n_scenario_rows: int = Field(description="All scenario rows, valid or not.")

    @property
    def tool_names(self) -> list[str]:
        return [tool.title for tool in self.tools]


def scenario_id(domain: str, index: int) -> str:
    return f"{domain}-{index:03d}"


def validate(raw: RawDataset, domain: str) -> Dataset:
    """Validate every row; bad ones land in `bad_rows`, never in the result's lists."""
    bad: list[BadRow] = []
    tools: list[ToolRow] = []
    seen: set[str] = set()
    for i, row in enumerate(raw.tools):
        title = row.get("title") if isinstance(row, dict) else None
        row_id = f"tools row {i}" + (f" ({title})" if isinstance(title, str) else "")
        try:
            tool = ToolRow.model_validate(row)
        except ValidationError as exc:
            bad.append(BadRow(config="tools", row_id=row_id, problem=describe_error(exc)))
            continue
        if tool.title in seen:
            bad.append(BadRow(config="tools", row_id=row_id, problem="duplicate tool name"))
            continue
        seen.add(tool.title)
        tools.append(tool)

    personas: dict[int, PersonaRow] = {}
    for i, row in enumerate(raw.personas):
        try:
            personas[i] = PersonaRow.model_validate(row)
        except ValidationError as exc:
            name = row.get("name") if isinstance(row, dict) else None
            row_id = f"personas row {i}" + (f" ({name})" if isinstance(name, str) else "")
            bad.append(BadRow(config="personas", row_id=row_id, problem=describe_error(exc)))

    scenarios: list[Scenario] = []
    for i, row in enumerate(raw.scenarios):
        sid = scenario_id(domain, i)
        try:
            parsed = ScenarioRow.model_validate(row)
        except ValidationError as exc:
            bad.append(BadRow(config="adaptive_tool_use", row_id=sid, problem=describe_error(exc)))
            continue
        persona = personas.get(parsed.persona_index)
        if persona is None:
            why = (
                "is a bad row"
                if parsed.persona_index < len(raw.personas)
                else f"does not exist ({len(raw.personas)} personas)"
            )
            problem = f"persona_index: persona {parsed.persona_index} {why}"
            bad.append(BadRow(config="adaptive_tool_use", row_id=sid, problem=problem))
            continue
        scenarios.append(Scenario(scenario_id=sid, index=i, persona=persona, row=parsed))

    if not tools:
        raise DatasetError(f"{raw.origin}: no valid tool rows for domain {domain!r}")
    if not scenarios:
        raise DatasetError(f"{raw.origin}: no valid scenario rows for domain {domain!r}")
    return Dataset(
        domain=domain,
        revision=raw.revision,
        origin=raw.origin,
        tools=tools,
        scenarios=scenarios,
        bad_rows=bad,
        n_scenario_rows=len(raw.scenarios),
    )


def read_layout(root: Path, domain: str, revision: str | None = None) -> RawDataset:
    """Rows from `<root>/<config>/<domain>-*.parquet` (or `.jsonl`), files in name order.

    The revision defaults to `dir:` plus a hash of every file read, so two copies with the same
    content are recognised as the same data.
    """
    if not root.is_dir():
        raise DatasetError(f"--source {root}: not a directory")
    digest = hashlib.sha256()
    rows: dict[str, list[dict[str, Any]]] = {}
    for config in CONFIGS:
        files = sorted((root / config).glob(f"{domain}-*.parquet"))
        reader: Callable[[Path], list[dict[str, Any]]] = _read_parquet
        if not files:
            files = sorted((root / config).glob(f"{domain}-*.jsonl"))
            reader = _read_jsonl
        if not files:
            raise DatasetError(
                f"{root}: no {config}/{domain}-*.parquet (or .jsonl) files; expected the hub "
                "layout <config>/<domain>-*.parquet"
            )
        rows[config] = []
        for path in files:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
            rows[config].extend(reader(path))
    return RawDataset(
        tools=rows["tools"],
        personas=rows["personas"],
        scenarios=rows["adaptive_tool_use"],
        revision=revision or f"dir:{digest.hexdigest()[:16]}",
        origin=str(root),
    )


def _read_parquet(path: Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path).to_pylist()
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise DatasetError(f"{path}: not a readable Parquet file ({exc})") from None


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except ValueError as exc:
            raise DatasetError(f"{path}:{n}: not valid JSON ({exc})") from None
    return out


def read_source(source: str, domain: str, offline: bool = False,
                hub_cache: Path | None = None) -> RawDataset:
    """Rows for `--source` (see the module docstring); `hub_cache` is where `hf` downloads go."""
    if domain not in DOMAINS:
        raise DatasetError(f"--domain {domain!r}: expected one of {', '.join(DOMAINS)}")
    if source == "sample":
        if domain != "banking":
            raise DatasetError(f"--source sample holds the banking domain only, not {domain!r}")
        return sample.raw_dataset()
    if source == "hf" or source.startswith("hf@"):
        revision = source.partition("@")[2] or "main"
        snapshot, sha = hub.fetch_snapshot(domain, revision=revision, cache=hub_cache,
                                       local_files_only=offline)
        return read_layout(snapshot, domain, revision=sha)
    path = Path(source).expanduser()
    if not path.exists():
        raise DatasetError(
            f"--source {source!r}: no such directory; expected 'hf', 'hf@<revision>', "
            "'sample' or a directory in the hub layout"
        )
    return read_layout(path, domain)


def load(
    source: str,
    domain: str = "banking",
    on_bad_row: OnBadRow = "fail",
    offline: bool = False,
    hub_cache: Path | None = None,
) -> Dataset:
    """Read and validate; with on_bad_row='fail', any bad row raises (listing all of them)."""
    if on_bad_row not in ("fail", "skip"):
        raise DatasetError(f"--on-bad-row {on_bad_row!r}: expected 'fail' or 'skip'")
    dataset = validate(read_source(source, domain, offline=offline, hub_cache=hub_cache), domain)
    if dataset.bad_rows and on_bad_row == "fail":
        lines = "\n".join(f"  {bad.line()}" for bad in dataset.bad_rows)
        raise DatasetError(
            f"{dataset.origin}: {len(dataset.bad_rows)} bad row(s); nothing written "
            f"(use --on-bad-row skip to leave them out):\n{lines}"
        )
    return dataset
