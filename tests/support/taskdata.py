"""Helpers for the task-builder tests: sample rows to corrupt, a hub-layout writer."""

from __future__ import annotations

import copy
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tasks.banking import sample


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
        table = pa.Table.from_pylist(config_rows)
        pq.write_table(table, folder / f"{domain}-00000-of-00001.parquet")
    return root


def tool_row(name: str, description: str, properties: dict | None = None) -> dict:
    import json

    properties = properties or {"account_number": {"type": "string"}}
    return {
        "title": name,
        "description": description,
        "type": "object",
        "properties": json.dumps(properties),
        "required": list(properties)[:1],
        "response_schema": json.dumps({"type": "object", "properties": {}}),
    }


def tiny_dataset(tools: list[dict], goals_per_scenario: list[list[str]]):
    """A validated Dataset from hand-written tool rows and goals (one persona)."""
    from tasks.banking.dataset import RawDataset, validate

    persona = {
        "name": "Test Person",
        "age": 40,
        "occupation": "tester",
        "personality_traits": ["exact"],
        "tone": "plain",
        "detail_level": "brief",
    }
    scenarios = [
        {"persona_index": 0, "first_message": "Hello.", "user_goals": goals}
        for goals in goals_per_scenario
    ]
    raw = RawDataset(
        tools=tools, personas=[persona], scenarios=scenarios, revision="t", origin="tiny"
    )
    return validate(raw, "banking")
