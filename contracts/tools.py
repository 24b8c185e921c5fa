"""A task's `environment/tools.json` (the verifier's copy is `tests/tools.json`): the tools the
bank serves, as OpenAI function tools, in the dataset's order.

Written by the task builder (`tasks/banking/render.py` · `tools_json`, through `Tool`); read
inside the task by the bank and the verifier (standard library, their own reading), and on the
host through `read_tools` (`bankbench check --task`, analysis's trial inputs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

TOOLS_FILE = "tools.json"


class ToolFunction(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1)
    description: str = ""
    parameters: dict[str, Any] = Field(
        default_factory=dict, description="The arguments' JSON Schema (an object).")


class Tool(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: Literal["function"] = "function"
    function: ToolFunction


_TOOLS = TypeAdapter(list[Tool])


def read_tools(path: Path) -> list[Tool]:
    """Every tool of a tools.json; a ValueError of one line when the file is unreadable or
    not a list of function tools."""
    try:
        return _TOOLS.validate_json(path.read_bytes())
    except OSError as exc:
        raise ValueError(f"{path}: unreadable ({exc.strerror or exc})") from None
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "the file"
        raise ValueError(f"{path}: not a list of function tools ({where}: {error['msg']})"
                         ) from None
