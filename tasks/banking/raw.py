"""What every dataset source hands over: the configs and domains of the published dataset, rows
as read (before validation) and the one error type for input that cannot become tasks.

The sources (hub.py, sample/, the directory reader in dataset.py) and the validator
(dataset.py) all import this module and nothing of each other's, so no import cycle.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

CONFIGS = ("tools", "personas", "adaptive_tool_use")
DOMAINS = ("banking", "healthcare", "insurance", "investment", "telecom")


class DatasetError(Exception):
    """Input that cannot become tasks; the message names the culprit."""


class RawDataset(BaseModel):
    """Rows as read, before validation."""

    tools: list[dict[str, Any]]
    personas: list[dict[str, Any]]
    scenarios: list[dict[str, Any]]
    revision: str = Field(description="Commit sha, 'sample-<v>' or 'dir:<hash>'.")
    origin: str = Field(description="Where the rows came from, for messages.")
