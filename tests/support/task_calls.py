"""Schema-valid calls of each expected tool of a built task, for scripting the mocker."""

from __future__ import annotations

import json
from pathlib import Path


def task_calls(task: Path) -> list[tuple[str, dict]]:
    """(tool, schema-valid arguments) for each expected tool, in goal order."""
    from tasks.banking.arguments import arguments_for

    expected = json.loads((task / "tests" / "expected.json").read_text())["expected_tools"]
    schemas = {t["function"]["name"]: t["function"]["parameters"]
               for t in json.loads((task / "environment" / "tools.json").read_text())}
    return [(name, arguments_for(schemas[name].get("properties") or {},
                                 schemas[name].get("required") or [])) for name in expected]
