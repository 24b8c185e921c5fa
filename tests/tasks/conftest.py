"""Shared fixtures: the bundled sample as hub rows, a hub-layout directory, one built task tree."""

from __future__ import annotations

import copy
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tasks.banking import sample
from tasks.banking.build import TEMPLATE_DIR, TEMPLATE_FILES, build_tasks


def sample_rows() -> dict[str, list[dict]]:
    """Fresh copies of the sample's rows, keyed by config name, safe to corrupt in a test."""
    return copy.deepcopy(
        {
            "tools": sample.tool_rows(),
            "personas": sample.raw_dataset().personas,
            "adaptive_tool_use": sample.scenario_rows(),
        }
    )


def write_hub_layout(root: Path, rows: dict[str, list[dict]], domain: str = "banking") -> Path:
    """`<root>/<config>/<domain>-00000-of-00001.parquet`, as the hub stores the dataset."""
    for config, config_rows in rows.items():
        folder = root / config
        folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(config_rows), folder / f"{domain}-00000-of-00001.parquet")
    return root


def template_ready() -> bool:
    return all((TEMPLATE_DIR / rel).is_file() for rel in TEMPLATE_FILES)


@pytest.fixture
def fake_template(tmp_path: Path) -> Path:
    """A stand-in template for tests about the writer itself, not about the bank or verifier."""
    root = tmp_path / "template"
    for rel in TEMPLATE_FILES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"# stand-in for {rel}\n")
    return root


@pytest.fixture(scope="session")
def built_sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The whole sample built once with the real template (match labels, goals mode)."""
    if not template_ready():
        pytest.skip("tasks/banking/template (mock bank and verifier) not present yet")
    out = tmp_path_factory.mktemp("tasks")
    build_tasks("sample", out, log=lambda line: None)
    return out
