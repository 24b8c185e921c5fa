"""Pydantic models of the three dataset configs' rows (tools, personas, adaptive_tool_use).

Rows arrive as plain dicts (from Parquet or the bundled JSON); each is validated on its own so a
bad row can be reported with its id and either stop the build or be skipped.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

JSON_SCHEMA_TYPES = {"string", "integer", "number", "boolean", "array", "object", "null"}
# OpenAI function names: letters, digits, underscore and dash, at most 64 characters.
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class ToolRow(BaseModel):
    """One row of the `tools` config: a function schema with JSON-string columns."""

    model_config = ConfigDict(extra="ignore")

    title: str = Field(description="Tool name (snake_case in the published data).")
    description: str = Field(min_length=1)
    type: str = Field(description="Always 'object': the parameters are a JSON object.")
    properties: str = Field(description="JSON string: parameter name -> JSON Schema.")
    required: list[str] = Field(default_factory=list)
    response_schema: str = Field(description="JSON string: schema of the tool's reply.")

    @field_validator("title")
    @classmethod
    def _name(cls, value: str) -> str:
        if not TOOL_NAME.match(value):
            raise ValueError(f"{value!r} is not a valid function name ([A-Za-z0-9_-], ≤ 64)")
        return value

    @field_validator("type")
    @classmethod
    def _object(cls, value: str) -> str:
        if value != "object":
            raise ValueError(f"must be 'object', got {value!r}")
        return value

    @field_validator("properties")
    @classmethod
    def _properties(cls, value: str) -> str:
        parsed = _json_object(value, "properties")
        for name, schema in parsed.items():
            _check_schema(schema, f"properties.{name}")
        return value

    @field_validator("response_schema")
    @classmethod
    def _response(cls, value: str) -> str:
        _json_object(value, "response_schema")
        return value

    @model_validator(mode="after")
    def _required_known(self) -> ToolRow:
        missing = [name for name in self.required if name not in self.parameters]
        if missing:
            raise ValueError(f"required names parameters that do not exist: {missing}")
        return self

    @property
    def parameters(self) -> dict[str, Any]:
        return json.loads(self.properties)

    @property
    def response(self) -> dict[str, Any]:
        return json.loads(self.response_schema)


class PersonaRow(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str = Field(min_length=1)
    age: int = Field(ge=0, le=130)
    occupation: str = Field(min_length=1)
    # 1-3 in the published data; no upper bound so a longer list does not stop a build.
    personality_traits: list[str] = Field(min_length=1)
    tone: str = Field(min_length=1)
    detail_level: str = Field(min_length=1)


class ScenarioRow(BaseModel):
    model_config = ConfigDict(extra="ignore")

    persona_index: int = Field(ge=0)
    first_message: str = Field(min_length=1)
    user_goals: list[str] = Field(min_length=4, max_length=8)

    @field_validator("first_message")
    @classmethod
    def _message(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("is blank")
        return value

    @field_validator("user_goals")
    @classmethod
    def _goals(cls, value: list[str]) -> list[str]:
        blank = [i for i, goal in enumerate(value) if not goal.strip()]
        if blank:
            raise ValueError(f"goals {blank} are blank")
        return value


def _json_object(text: str, what: str) -> dict[str, Any]:
    try:
        parsed = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{what} is not valid JSON ({exc})") from None
    if not isinstance(parsed, dict):
        raise ValueError(f"{what} must be a JSON object, got {type(parsed).__name__}")
    return parsed


def _check_schema(schema: Any, where: str) -> None:
    """The subset of JSON Schema the mock bank validates: types, enums, items, properties."""
    if not isinstance(schema, dict):
        raise ValueError(f"{where} must be a JSON Schema object")
    declared = schema.get("type")
    types = declared if isinstance(declared, list) else [declared] if declared is not None else []
    unknown = [t for t in types if t not in JSON_SCHEMA_TYPES]
    if unknown:
        raise ValueError(f"{where} has unknown type {unknown[0]!r}")
    if "enum" in schema and (not isinstance(schema["enum"], list) or not schema["enum"]):
        raise ValueError(f"{where}.enum must be a non-empty list")
    if isinstance(schema.get("items"), dict):
        _check_schema(schema["items"], f"{where}.items")
    nested = schema.get("properties")
    if isinstance(nested, dict):
        for name, child in nested.items():
            _check_schema(child, f"{where}.{name}")


def describe_error(exc: ValidationError) -> str:
    """One line: `field: message; field: message`."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "row"
        message = error["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {message}")
    return "; ".join(parts)
